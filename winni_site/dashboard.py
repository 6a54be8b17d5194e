"""What the admin dashboard shows, read straight from the database, Redis and the stores' own
services. Read-only: nothing here writes. Every function is cheap at 100K conversations / 1M
messages (large tables are counted from PostgreSQL's estimate, not COUNT(*))."""
from __future__ import annotations

import datetime as dt
from typing import Any, TypedDict, cast

import redis
from django.apps import apps
from django.conf import settings
from django.core.cache import cache
from django.db import connection, models
from django.db.models import Count
from django.db.models.fields.json import KT
from django.db.models.functions import TruncDate
from django.utils import timezone

from core import health, searchable


def estimated_rows(model: type[models.Model]) -> int | None:
    """The planner's row estimate (pg_class.reltuples), or None before the first ANALYZE."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [model._meta.db_table])
        row = cursor.fetchone()
    return None if row is None or row[0] < 0 else int(row[0])


def row_count(model: type[models.Model], rows: dict[str, Any] | None = None) -> tuple[int, bool]:
    """(count, exact): the estimate for big tables, an exact COUNT(*) for small ones. `rows`: a
    filter saying which rows the store counts (counted exactly)."""
    if rows:
        return model._default_manager.filter(**rows).count(), True
    estimate = large_table_estimate(model)
    if estimate is not None:
        return estimate, False
    return model._default_manager.count(), True


def large_table_estimate(model: type[models.Model]) -> int | None:
    """The estimate when the table has at least WINNI_ADMIN_EXACT_COUNT_BELOW rows, else None:
    COUNT(*) of a small table costs less than a millisecond, and small numbers should be exact."""
    estimate = estimated_rows(model)
    if estimate is not None and estimate >= settings.WINNI_ADMIN_EXACT_COUNT_BELOW:
        return estimate
    return None


class StoreCount(TypedDict):
    label: str
    count: int | None
    exact: bool
    url: str | None


# The stores the dashboard counts, by model label. A store that is not installed yet is shown as
# "not available" (its model cannot be found), never as zero.
STORE_MODELS: list[tuple[str, str]] = [
    ("Conversations", "conversations.Conversation"),
    ("Messages", "conversations.Message"),
    ("Orchestration results", "conversations.FiedlerResult"),
    ("Startup contexts", "contexts.StartupContext"),
    ("Memories", "memory.Memory"),
    ("Cached answers", "librarian.QueryMemory"),
    ("Medallions", "medallions.Medallion"),
]


def find_model(label: str) -> type[models.Model] | None:
    try:
        return apps.get_model(label)
    except LookupError:
        return None


# Stores whose tile counts only some rows, with the filter and the changelist query showing them:
# the answer cache keeps every question asked, but a cached answer is a row with an answer (the
# number the cache's own page shows; at most LIBRARIAN_MAX_CACHED plus the pinned ones).
STORE_ROWS: dict[str, tuple[dict[str, Any], str]] = {
    "Cached answers": ({"answer__isnull": False}, "answer__isempty=0"),
}


def store_models() -> list[tuple[str, type[models.Model] | None]]:
    """Each store's model; searchable kinds registered by apps that are not listed above too."""
    listed = [(title, find_model(label)) for title, label in STORE_MODELS]
    known = {model for _, model in listed if model is not None}
    for kind in searchable.kinds():
        model = searchable.get(kind).model
        if model not in known:
            listed.append((str(model._meta.verbose_name_plural).capitalize(), model))
    return listed


def messages_per_day(days: int = 30, project: Any = None) -> list[tuple[dt.date, int]]:
    """Messages stored on each of the last `days` days (UTC), oldest first, zero days included;
    `project`: only that project's."""
    from conversations.models import Message

    today = timezone.now().date()
    first = today - dt.timedelta(days=days - 1)
    start = dt.datetime.combine(first, dt.time.min, tzinfo=dt.timezone.utc)
    messages = Message.objects.all() if project is None else Message.objects.filter(project=project)
    rows = (
        messages.filter(created_at__gte=start)
        .annotate(day=TruncDate("created_at", tzinfo=dt.timezone.utc))
        .values("day")
        .annotate(n=Count("*"))  # count(*) lets PostgreSQL answer from the created_at index alone
        .order_by()
    )
    per_day = {row["day"]: row["n"] for row in rows}
    return [(first + dt.timedelta(days=i), per_day.get(first + dt.timedelta(days=i), 0)) for i in range(days)]


def recall_per_day(days: int = 30) -> list[tuple[dt.date, int, float | None]]:
    """(day, blocks delivered, share of the day's captured prompts that received one) for each of the
    last `days` days (UTC), oldest first; the share is None on a day without prompts."""
    from agents.models import Injection
    from conversations.models import Message

    today = timezone.now().date()
    first = today - dt.timedelta(days=days - 1)
    start = dt.datetime.combine(first, dt.time.min, tzinfo=dt.timezone.utc)

    def per_day(rows: Any) -> dict[dt.date, int]:
        counted = (rows.filter(created_at__gte=start).annotate(day=TruncDate("created_at", tzinfo=dt.timezone.utc))
                   .values("day").annotate(n=Count("*")).order_by())
        return {row["day"]: row["n"] for row in counted}

    injections = per_day(Injection.objects.filter(delivered=True))
    prompts = per_day(Message.objects.filter(role="user", metadata__hook_event="UserPromptSubmit"))
    given = per_day(Injection.objects.filter(trigger=Injection.Trigger.PROMPT, message__isnull=False, delivered=True))
    out = []
    for i in range(days):
        day = first + dt.timedelta(days=i)
        out.append((day, injections.get(day, 0), given.get(day, 0) / prompts[day] if prompts.get(day) else None))
    return out


def conversations_per_source() -> list[tuple[str, int]]:
    """Claude Code, API and proxy first (zero when none), then any other source, largest first.
    The source is metadata.source, lower-cased; conversations without one came in through the API.
    (Grouped on the raw value and normalised here: half the cost of lower()/coalesce in SQL.)"""
    from conversations.models import DEFAULT_SOURCE, SOURCES, Conversation

    rows = Conversation.objects.values(source=KT("metadata__source")).annotate(n=Count("*")).order_by()
    counts: dict[str, int] = {}
    for row in rows:
        source = (row["source"] or DEFAULT_SOURCE).strip().lower() or DEFAULT_SOURCE
        counts[source] = counts.get(source, 0) + row["n"]
    known = [(source, counts.pop(source, 0)) for source in SOURCES]
    return known + sorted(counts.items(), key=lambda item: -item[1])


class TableSize(TypedDict):
    table: str
    bytes: int
    rows: int | None


def table_sizes(limit: int = 12) -> list[TableSize]:
    """The largest tables of this database (heap + indexes + TOAST), from the catalogs."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, pg_total_relation_size(c.oid), c.reltuples::bigint
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema()
            ORDER BY pg_total_relation_size(c.oid) DESC, c.relname
            LIMIT %s
            """,
            [limit],
        )
        return [{"table": name, "bytes": size, "rows": None if rows < 0 else rows} for name, size, rows in cursor]


def database_size() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        return int(cursor.fetchone()[0])


def queue_depth() -> int | None:
    """Tasks waiting in Celery's default queue (a Redis list), or None when Redis does not answer."""
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)
        return int(client.llen("celery"))
    except redis.RedisError:
        return None


# The status panel is cached this long (per web process): the checks apps add can be slow on
# big tables (counting the embedding backlog of a million messages takes ~0.3 s).
STATUS_CACHE_SECONDS = 15
STATUS_CACHE_KEY = "winni:admin:system-status"


def system_status() -> dict[str, Any]:
    """system_status_now(), at most STATUS_CACHE_SECONDS old."""
    return cast(dict[str, Any], cache.get_or_set(STATUS_CACHE_KEY, system_status_now, STATUS_CACHE_SECONDS))


def system_status_now() -> dict[str, Any]:
    """/healthz's report (database, Redis, worker heartbeat, and what apps add, e.g. the embedding
    backlog) plus the Celery queue depth."""
    healthy, report = health.health_report()
    extra = {name: report[name] for name in health.EXTRA_CHECKS if name in report}
    return {
        "healthy": healthy,
        "status": report.get("status"),
        "database": report.get("database", {}),
        "redis": report.get("redis", {}),
        "worker": report.get("worker", {}),
        "queue_depth": queue_depth(),
        "checks": extra,
        "as_of": timezone.now(),
    }


# --- the answer cache ("Librarian") ---------------------------------------------------------------


def cache_hit_rate_series(days: int = 30) -> list[tuple[dt.date, float | None]]:
    """(day, hit rate 0–1 or None when nothing was asked) per day, oldest first."""
    from memory.librarian.services import librarian_hit_rate_series

    return [(dt.date.fromisoformat(point["date"]), point["hit_rate"]) for point in librarian_hit_rate_series(days=days)]


def cache_tier_counts() -> list[tuple[str, int]]:
    """Cached answers per tier (cold, warm, hot, core); questions asked without an answer are not
    counted, like the tile and the cache's own page."""
    from memory.librarian.models import QueryMemory, Tier

    counts = dict(QueryMemory.objects.filter(answer__isnull=False).values_list("tier")
                  .annotate(n=Count("pk")).order_by())
    return [(tier, counts.pop(tier, 0)) for tier in Tier.values] + sorted(counts.items())


# --- the LLM: today's calls against the budget, and why digests stayed offline -----------------

# The LLM panel lists this many of today's digests that stayed offline, newest first.
DIGEST_FALLBACKS_SHOWN = 10


def llm_today() -> dict[str, Any] | None:
    """Today's (UTC) LLM calls, tokens of the daily budget and estimated cost (core.llm), digests
    written by the model, waiting for it, and those that kept the offline digest with the reason;
    None when no LLM is configured and none was called today."""
    from conversations.models import SessionDigest
    from conversations.services import digest as digests
    from core import llm

    usage = llm.usage_today()
    configured = settings.WINNI_MEDALLION_LLM_PROVIDER in llm.CHAT_CLIENTS
    if not configured and not usage["calls"]:
        return None
    today = SessionDigest.objects.filter(updated_at__gte=llm.today_start())
    fallbacks = today.exclude(writer_note="")
    return {
        **usage,
        "provider": settings.WINNI_MEDALLION_LLM_PROVIDER if configured else "",
        "model": settings.WINNI_MEDALLION_LLM_MODEL if configured else "",
        "budget_share": min(usage["tokens"] / usage["budget"], 1.0) if usage["budget"] else 1.0,
        "digests_enabled": digests.model_digests_enabled(),
        "digests_by_model": today.exclude(writer="extractive").count(),
        "digests_waiting": digests.model_backlog(),
        "backlog_cap": settings.WINNI_DIGEST_LLM_BACKLOG,
        "fallback_count": fallbacks.count(),
        "fallbacks": list(fallbacks.order_by("-updated_at")
                          .values("updated_at", "session_id", "conversation_id", "writer_note")[:DIGEST_FALLBACKS_SHOWN]),
    }
