"""The answer cache's statistics: hourly counters of asks and hits (one upsert per ask), the
overall numbers and the hit rate per day."""
from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import connection, models
from django.db.models import Sum
from django.utils import timezone

from core import projects
from core.errors import InvalidInput
from memory.librarian.models import LibrarianHourlyStats, QueryMemory, Tier

if TYPE_CHECKING:  # (outputs imports the services)
    from memory.librarian.outputs import DayDict, StatsDict

DAYS_RANGE = "days must be between 1 and 365"
EXACT, SEMANTIC, MISS = "exact", "semantic", "miss"


def count_ask(outcome: str) -> None:
    """One upsert into this hour's counters (so the hit rate can be charted over time)."""
    hour = timezone.now().replace(minute=0, second=0, microsecond=0)
    table = LibrarianHourlyStats._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} AS t (hour, asks, exact_hits, semantic_hits, misses) VALUES (%s, 1, %s, %s, %s) "
            "ON CONFLICT (hour) DO UPDATE SET asks = t.asks + 1, exact_hits = t.exact_hits + EXCLUDED.exact_hits, "
            "semantic_hits = t.semantic_hits + EXCLUDED.semantic_hits, misses = t.misses + EXCLUDED.misses",
            [hour, int(outcome == EXACT), int(outcome == SEMANTIC), int(outcome == MISS)],
        )


# --- statistics -----------------------------------------------------------------------------------------


def _rate(hits: int, asks: int) -> float | None:
    return round(hits / asks, 4) if asks else None


def librarian_memory_stats() -> StatsDict:
    """Hit rate overall and over the last 24 h, exact vs semantic hits, tiers, sizes, time saved."""
    now = timezone.now()
    totals = LibrarianHourlyStats.objects.aggregate(
        asks=Sum("asks", default=0), exact=Sum("exact_hits", default=0), semantic=Sum("semantic_hits", default=0)
    )
    day = LibrarianHourlyStats.objects.filter(hour__gt=now - dt.timedelta(hours=24)).aggregate(
        asks=Sum("asks", default=0), exact=Sum("exact_hits", default=0), semantic=Sum("semantic_hits", default=0)
    )
    tiers = dict.fromkeys(Tier.values, 0)
    entries = projects.scope_queryset(QueryMemory.objects.all(), None)  # a token limited to projects: theirs
    for row in entries.values("tier").annotate(n=models.Count("pk")):
        tiers[row["tier"]] = row["n"]
    cached_tiers = dict.fromkeys(Tier.values, 0)
    for row in entries.filter(answer__isnull=False).values("tier").annotate(n=models.Count("pk")):
        cached_tiers[row["tier"]] = row["n"]
    table = QueryMemory._meta.db_table
    with connection.cursor() as cursor:
        # Whole stored rows (answer, query, vector, counters; after TOAST compression).
        cursor.execute(
            f"SELECT count(*) FILTER (WHERE answer IS NOT NULL),"
            f" coalesce(sum(pg_column_size(t.*)) FILTER (WHERE answer IS NOT NULL), 0),"
            f" coalesce(sum(cache_hits::bigint * compute_time_ms), 0), count(*) FILTER (WHERE pinned) FROM {table} t"
        )
        cached, cached_bytes, saved_ms, pinned = cursor.fetchone()
    hits = totals["exact"] + totals["semantic"]
    day_hits = day["exact"] + day["semantic"]
    return {
        "asks": totals["asks"],
        "hits": hits,
        "exact_hits": totals["exact"],
        "semantic_hits": totals["semantic"],
        "misses": totals["asks"] - hits,
        "hit_rate": _rate(hits, totals["asks"]),
        "asks_24h": day["asks"],
        "hits_24h": day_hits,
        "hit_rate_24h": _rate(day_hits, day["asks"]),
        "entries": sum(tiers.values()),
        "cached_answers": cached,
        "pinned": pinned,
        "tiers": tiers,
        "cached_by_tier": cached_tiers,
        "bytes_per_cached_answer": round(cached_bytes / cached) if cached else 0,
        "time_saved_ms": int(saved_ms),
        "max_cached": settings.LIBRARIAN_MAX_CACHED,
        "similarity_threshold": settings.LIBRARIAN_SIMILARITY_THRESHOLD,
        "ttl_seconds": settings.LIBRARIAN_TTL_SECONDS,
    }


def librarian_hit_rate_series(*, days: int = 14) -> list[DayDict]:
    """One point per UTC day for the last `days` days (oldest first, days without asks included):
    asks, exact and semantic hits, misses and the hit rate — for the admin dashboard's chart."""
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 365:
        raise InvalidInput(f"days: {DAYS_RANGE}", field="days")
    today = timezone.now().date()
    first = today - dt.timedelta(days=days - 1)
    start = dt.datetime.combine(first, dt.time(), tzinfo=dt.timezone.utc)
    per_day: dict[dt.date, dict[str, int]] = {}
    for row in LibrarianHourlyStats.objects.filter(hour__gte=start).values("hour", "asks", "exact_hits", "semantic_hits", "misses"):
        bucket = per_day.setdefault(row["hour"].astimezone(dt.timezone.utc).date(), Counter())
        for name in ("asks", "exact_hits", "semantic_hits", "misses"):
            bucket[name] += row[name]
    series: list[DayDict] = []
    for offset in range(days):
        date = first + dt.timedelta(days=offset)
        counts = per_day.get(date, {})
        asks = counts.get("asks", 0)
        hits = counts.get("exact_hits", 0) + counts.get("semantic_hits", 0)
        series.append({
            "date": date.isoformat(),
            "asks": asks,
            "exact_hits": counts.get("exact_hits", 0),
            "semantic_hits": counts.get("semantic_hits", 0),
            "misses": counts.get("misses", 0),
            "hit_rate": _rate(hits, asks),
        })
    return series
