"""Shared bench set-up: Django on its own embedded PostgreSQL + Redis in a bench data dir
(WINNI_DATA_DIR, default /tmp/winni-bench-<name>), migrated, with a REST client holding a token."""
from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def setup(name: str, **env: str) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("WINNI_DATA_DIR", f"/tmp/winni-bench-{name}")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")
    os.environ.setdefault("WINNI_LOG_LEVEL", "WARNING")
    os.environ.setdefault("WINNI_MCP_TOOLSETS", "all")  # the benchmarks call tools of every set
    for key, value in env.items():
        os.environ.setdefault(key, value)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def rest_client() -> Any:
    from rest_framework.test import APIClient

    from winni_site import auth

    _, secret = auth.token_create(name=f"bench-{uuid.uuid4().hex[:8]}")
    client = APIClient(SERVER_NAME="127.0.0.1")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def embed_pending(kind: str, batch: int = 256, scope: Any = None) -> int:
    """What the Celery worker does after the writes commit, in-process and in large batches
    (only rows of `scope`, a queryset, when given)."""
    from tqdm import tqdm

    from memory import embeddings, vectors

    model = embeddings.model_name()
    keys = vectors.keys_in_batch_order(kind=kind, rows=vectors.pending(kind=kind, model=model, scope=scope))
    with tqdm(total=len(keys), desc=f"embedding {kind}s", unit="row") as bar:
        for chunk in vectors.chunks(keys, batch):
            vectors.embedding_store(kind=kind, ids=chunk, build_index=False)
            bar.update(len(chunk))
    vectors.index_ensure(model=model, kind=kind, dimensions=embeddings.dimensions())
    return len(keys)


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]  # noqa: E731
    return pick(0.5), pick(0.95)
