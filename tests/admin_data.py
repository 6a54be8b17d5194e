"""The admin tests' corpus, made through the conversation services (shared by the page tests and
the browser tests)."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from conversations import services as conv

LONG_TURNS = 260  # more than one transcript page (200)


@dataclass
class AdminCorpus:
    claude: Any
    proxy: Any
    api: Any
    long: Any
    per_day: dict[dt.date, int] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)


def build_admin_corpus() -> AdminCorpus:
    now = timezone.now()
    per_day: dict[dt.date, int] = {}

    def store(conversation: Any, role: str, content: str, when: dt.datetime, **extra: Any) -> None:
        conv.message_store(conversation_id=conversation.id, role=role, content=content, created_at=when, **extra)
        per_day[when.astimezone(dt.timezone.utc).date()] = per_day.get(when.astimezone(dt.timezone.utc).date(), 0) + 1

    claude = conv.conversation_begin(session_id="sess-claude-1", metadata={"source": "claude-code", "cwd": "/src/winni"})
    store(claude, "system", "You are a careful deployment assistant.", now)
    store(claude, "user", "How do we deploy the kubernetes cluster for staging?", now)
    store(claude, "tool", "NAME READY STATUS\nweb-1 1/1 Running", now, metadata={"tool_name": "Bash"})
    store(claude, "assistant", "Apply the helm chart with the staging values, then watch the rollout.", now)

    proxy = conv.conversation_begin(session_id="sess-proxy-1", metadata={"source": "proxy"})
    two_days_ago = now - dt.timedelta(days=2)
    store(proxy, "user", "List the open pull requests about billing.", two_days_ago)
    store(proxy, "assistant", "There are three open pull requests touching billing.", two_days_ago)

    api = conv.conversation_begin(session_id="sess-api-1")  # no metadata: counted as API
    ten_days_ago = now - dt.timedelta(days=10)
    for text in ("Summarise the quarterly report.", "Revenue grew by nine percent.", "Thanks!"):
        store(api, "user" if text != "Revenue grew by nine percent." else "assistant", text, ten_days_ago)

    long = conv.conversation_begin(session_id="sess-long", metadata={"source": "claude-code"})
    twenty_days_ago = now - dt.timedelta(days=20)
    # One bulk write (one transaction, one embedding task), as an import stores a long session:
    # 260 single writes, each committed and embedded on its own, were most of a browser test's set-up.
    conv.messages_store_bulk(conversation_id=long.id, messages=[
        {"role": "user" if turn % 2 else "assistant", "created_at": twenty_days_ago,
         "content": f"Step {turn} of the migration plan." if turn != 250 else "The flamingo checksum finally matched."}
        for turn in range(1, LONG_TURNS + 1)])
    day = twenty_days_ago.astimezone(dt.timezone.utc).date()
    per_day[day] = per_day.get(day, 0) + LONG_TURNS
    return AdminCorpus(claude=claude, proxy=proxy, api=api, long=long, per_day=per_day)


def build_cache_activity() -> dict[str, Any]:
    """Answer cache traffic for today: one remembered answer asked four times (hits) and one
    question nobody answered before (a miss). Returns the librarian's own numbers."""
    from memory.librarian import services as librarian

    librarian.librarian_remember(query="How do I run the tests?", answer="./winni test")
    for _ in range(4):
        librarian.librarian_ask(query="How do I run the tests?")
    librarian.librarian_ask(query="Who wrote the flamingo checksum?")
    today = librarian.librarian_hit_rate_series(days=1)[0]
    return {"hit_rate": today["hit_rate"], "asks": today["asks"]}
