"""Admin page server time at 100K conversations / 1M messages (issue 6: ≤ 300 ms per page).

    WINNI_DATA_DIR=/tmp/admin-bench .venv/bin/python bench/admin.py
    .venv/bin/python bench/admin.py --conversations 10000 --messages 100000 --runs 10   # quick

Loads the synthetic corpus from bench/corpus.py once (COPY; reused on later runs when the
database already holds it), then requests each admin page through Django's full request stack
in this process (Django's test client: middleware, session login, templates — no network) and
prints p50/p95 server time per page. Use a separate WINNI_DATA_DIR: the load takes minutes and
a gigabyte or two of disk."""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.corpus import MEDIUM_TERM, RARE_TERM, load_corpus, setup_django  # noqa: E402

# Terms from bench/corpus.py with known frequencies: in ~0.002%, ~1% and ~90% of messages.
COMMON_TERM = "update"


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def ensure_corpus(conversations: int, messages: int) -> None:
    from conversations.models import Conversation, Message
    from winni_site import dashboard

    have = dashboard.estimated_rows(Message) or Message.objects.count()
    if have >= messages * 0.95:
        print(f"corpus present: ≈ {dashboard.estimated_rows(Conversation):,} conversations, ≈ {have:,} messages")
        return
    if have:
        sys.exit(f"the database holds {have:,} messages, not ~{messages:,}: use an empty WINNI_DATA_DIR")
    load_corpus(conversations=conversations, messages=messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=30, help="requests per page")
    args = parser.parse_args()

    os.environ.setdefault("WINNI_DATA_DIR", "/tmp/admin-bench")
    setup_django()
    ensure_corpus(args.conversations, args.messages)

    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from conversations.models import Conversation

    user = get_user_model().objects.filter(username="bench-admin").first()
    if user is None:
        user = get_user_model().objects.create_superuser("bench-admin", "bench@example.com", "bench-pw-123")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)

    rng = random.Random(0)
    sample_ids = list(Conversation.objects.order_by("?").values_list("id", flat=True)[:200])
    # The longest conversations (200 turns): a full transcript page.
    longest = list(
        Conversation.objects.raw(
            "SELECT conversation_id AS id FROM conversations_message WHERE turn_number = 200 LIMIT 50"
        )
    )
    long_ids = [row.id for row in longest] or sample_ids

    def transcript(ids: list[Any], suffix: str = "") -> Callable[[], str]:
        return lambda: reverse("admin:conversations_conversation_transcript", args=[rng.choice(ids)]) + suffix

    def change(ids: list[Any]) -> Callable[[], str]:
        return lambda: reverse("admin:conversations_conversation_change", args=[rng.choice(ids)])

    changelist = reverse("admin:conversations_conversation_changelist")
    pages: list[tuple[str, Callable[[], str]]] = [
        ("dashboard /admin/", lambda: "/admin/"),
        ("conversation list", lambda: changelist),
        ("conversation list, page 10", lambda: changelist + "?p=10"),
        ("conversation list, session search", lambda: changelist + f"?q=bench-session-{rng.randrange(10_000)}"),
        ("transcript (random conversation)", transcript(sample_ids)),
        ("transcript (200 turns)", transcript(long_ids)),
        ("transcript ?turn=150", transcript(long_ids, "?turn=150#turn-150")),
        ("conversation record view (random)", change(sample_ids)),
        (f"search, rare term ({RARE_TERM})", lambda: f"/admin/search/?q={RARE_TERM}"),
        (f"search, 1% term ({MEDIUM_TERM})", lambda: f"/admin/search/?q={MEDIUM_TERM}"),
        (f"search, 2 terms ({MEDIUM_TERM} cache)", lambda: f"/admin/search/?q={MEDIUM_TERM}+cache"),
        (f"search, 90% term ({COMMON_TERM})", lambda: f"/admin/search/?q={COMMON_TERM}"),
    ]

    results = []
    for name, url_for in pages:
        client.get(url_for())  # warm caches and connections once
        times = []
        for _ in tqdm(range(args.runs), desc=name[:34].ljust(34), unit="req", leave=False):
            url = url_for()
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
            if response.status_code != 200:
                sys.exit(f"{url} answered {response.status_code}")
        results.append((name, statistics.median(times), percentile(times, 95)))

    print(f"\nadmin pages at ≈ {args.conversations:,} conversations / {args.messages:,} messages, "
          f"{args.runs} requests each, server time in ms (Django test client, in process)")
    print(f"{'page':<40} {'p50':>8} {'p95':>8}")
    for name, p50, p95 in results:
        flag = "" if p95 <= 300 else "   > 300 ms"
        print(f"{name:<40} {p50:8.1f} {p95:8.1f}{flag}")


if __name__ == "__main__":
    main()
