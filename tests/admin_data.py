"""The admin tests' corpus, made through the conversation services (shared by the page tests and
the browser tests)."""
from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

from django.utils import timezone

from conversations import services as conv

T = TypeVar("T")

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
    for turn in range(1, LONG_TURNS + 1):
        text = f"Step {turn} of the migration plan." if turn != 250 else "The flamingo checksum finally matched."
        store(long, "user" if turn % 2 else "assistant", text, twenty_days_ago)
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


# --- Build once per process, then copy the rows back ---------------------------------------------
# Each admin test starts from an empty database and used to build its corpus again (≈ 7 s on a 2-core
# host, most of it storing 270 messages through the services). The first test of a process builds
# it; the next ones get exactly the rows it wrote back with COPY, in a few milliseconds.

_REPLAYS: dict[tuple[str, bool], tuple[list[tuple[str, list[str], bytes]], Any] | None] = {}


def _tables() -> list[str]:
    from django.db import connection

    return sorted(connection.introspection.table_names(include_views=False))


def _fingerprints(tables: list[str]) -> dict[str, tuple[int, str]]:
    """Rows and an MD5 of their text, per table (small tables: the admin corpus is a few hundred rows)."""
    from django.db import connection

    quote = connection.ops.quote_name
    query = " UNION ALL ".join(
        f"SELECT %s, count(*), md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), '')) FROM {quote(t)} r"
        for t in tables)
    with connection.cursor() as cursor:
        cursor.execute(query, tables)
        return {name: (rows, digest) for name, rows, digest in cursor.fetchall()}


def _stored_columns(table: str) -> list[str]:
    """The columns COPY can write: not generated ones (PostgreSQL computes those again)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                       "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum", [table])
        return [row[0] for row in cursor.fetchall()]


def replayed(build: Callable[[], T]) -> T:
    """`build()` the first time in this process; later, the rows that first build wrote, copied
    back into the (empty) tables, and a copy of what it returned. Only when the build wrote into
    empty tables alone: one that changed rows a test made before it (a user, a session) is built
    again each time. The caller's database must be as empty as it was for the first build: every
    test here starts from a flushed or rolled-back database."""
    from django.db import connection, transaction

    key = (f"{build.__module__}.{build.__qualname__}", connection.in_atomic_block)
    if key in _REPLAYS:
        replay = _REPLAYS[key]
        if replay is None:
            return build()
        rows, value = replay
        quote = connection.ops.quote_name
        with transaction.atomic(), connection.cursor() as cursor:
            # As a restore does: no triggers, no foreign-key checks (the rows were consistent).
            cursor.execute("SET session_replication_role = replica")
            try:
                for table, columns, data in rows:
                    names = ", ".join(quote(c) for c in columns)
                    with cursor.copy(f"COPY {quote(table)} ({names}) FROM STDIN") as copy_in:
                        copy_in.write(data)
            finally:
                cursor.execute("SET session_replication_role = DEFAULT")
        return copy.deepcopy(value)

    tables = _tables()
    before = _fingerprints(tables)
    value = build()
    after = _fingerprints(tables)
    changed = [table for table in tables if after[table] != before[table]]
    with connection.cursor() as cursor:
        # Turning triggers off for the copy needs a superuser (the embedded server's postgres is).
        cursor.execute("SELECT current_setting('is_superuser') = 'on'")
        superuser = cursor.fetchone()[0]
    if not superuser or any(before[table][0] for table in changed):
        _REPLAYS[key] = None
        return value
    quote = connection.ops.quote_name
    rows = []
    with connection.cursor() as cursor:
        for table in changed:
            columns = _stored_columns(table)
            names = ", ".join(quote(c) for c in columns)
            with cursor.copy(f"COPY (SELECT {names} FROM {quote(table)}) TO STDOUT") as copy_out:
                rows.append((table, columns, b"".join(bytes(chunk) for chunk in copy_out)))
    _REPLAYS[key] = (rows, copy.deepcopy(value))
    return value
