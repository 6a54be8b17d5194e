"""Checkpoints over the corpus of real agent traffic (tests/data/traffic/, docs/capture.md "The
traffic corpus"): every recorded hook call is replayed through POST /api/v1/capture/events (as the
hook program posts it, checkpoints off meanwhile), every saved session file is imported
(import_agent_transcripts), and then every session, captured and imported, is checkpointed into
its project's medallion with the offline (extractive) writer. Prints, per corpus folder and
source, how many checkpoints succeeded and failed, and why the failures failed.

    .venv/bin/python bench/traffic.py

Runs against a throw-away embedded PostgreSQL (the test settings) unless DATABASE_URL is set."""
from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from io import StringIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.test")
os.environ["WINNI_MEDALLION_LLM_PROVIDER"] = "extractive"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402


def main() -> None:
    from agents import capture
    from agents import dialects as agent_dialects
    from conversations.models import Conversation
    from medallions import services as medallions
    from tests.traffic_corpus import TRAFFIC, corpus_dirs, hook_calls
    from winni_site import auth

    call_command("migrate", verbosity=0)
    settings.WINNI_CAPTURE_CHECKPOINT = False  # every session is checkpointed below, once
    _, secret = auth.token_create(name="bench-traffic")
    api = APIClient(SERVER_NAME="127.0.0.1")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")

    scratch = Path(tempfile.mkdtemp(prefix="winni-traffic-"))
    sessions: list[tuple[str, str, Conversation]] = []
    for folder in corpus_dirs():
        name = str(folder.relative_to(TRAFFIC))
        calls = [c for c in hook_calls(folder, scratch / name) if c.body is not None]
        for call in calls:
            # Distinct sessions per folder: the Windows variant repeats the Claude recording's ids.
            call.body["payload"]["session_id"] = f"{name}:{call.body['payload']['session_id']}"
            response = api.post("/api/v1/capture/events", call.body, format="json")
            if response.status_code >= 300:
                print(f"{name}: event {call.index} refused: {response.status_code} {response.content[:200]!r}")
        source = agent_dialects.SOURCES[calls[0].agent]
        prefix = f"{name}:"
        for conversation in Conversation.objects.filter(metadata__source=source, session_id__startswith=prefix):
            sessions.append((name, "hook", conversation))
        if (folder / "sessions").exists():
            agent = calls[0].agent
            before = set(Conversation.objects.values_list("pk", flat=True))
            call_command("import_agent_transcripts", "--agent", agent, "--no-progress", str(folder / "sessions"),
                         stdout=StringIO(), stderr=StringIO())
            for conversation in Conversation.objects.exclude(pk__in=before):
                sessions.append((name, "transcript", conversation))

    results: Counter[tuple[str, str, str]] = Counter()
    causes: Counter[str] = Counter()
    took: dict[tuple[str, str], list[float]] = {}
    for name, source, conversation in sessions:
        conversation.refresh_from_db()
        if conversation.project is None:
            results[(name, source, "no project")] += 1
            continue
        started = time.perf_counter()
        try:
            medallions.checkpoint_session(scope=capture.project_scope(conversation.project),
                                          evidence={"conversation_id": str(conversation.id)}, actor="bench")
        except Exception as exc:  # noqa: BLE001 - counted and named below
            results[(name, source, "failed")] += 1
            causes[f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"] += 1
        else:
            results[(name, source, "ok")] += 1
        took.setdefault((name, source), []).append((time.perf_counter() - started) * 1000)

    print(f"{'corpus folder':<36} {'source':<11} {'sessions':>8} {'ok':>4} {'failed':>6} {'no project':>10} "
          f"{'p50 ms':>7}")
    for name, source in sorted({(n, s) for n, s, _ in results}):
        counts = {outcome: results[(name, source, outcome)] for outcome in ("ok", "failed", "no project")}
        times = sorted(took.get((name, source)) or [0.0])
        print(f"{name:<36} {source:<11} {sum(counts.values()):>8} {counts['ok']:>4} {counts['failed']:>6} "
              f"{counts['no project']:>10} {times[len(times) // 2]:>7.0f}")
    total = Counter()
    for (_, _, outcome), count in results.items():
        total[outcome] += count
    print(f"total: {sum(total.values())} sessions, {total['ok']} checkpoints succeeded, {total['failed']} failed, "
          f"{total['no project']} without a project")
    for cause, count in causes.most_common():
        print(f"  failed ({count}): {cause}")


if __name__ == "__main__":
    main()
