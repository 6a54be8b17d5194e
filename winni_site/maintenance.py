"""Housekeeping over every store: retention purges and VACUUM (ANALYZE).

Retention is a small registry: a store whose old rows may be purged adds one `Retention` line
(setting name, model, the date field that says how old a row is). Memories, medallions and
startup contexts are never listed: they are deleted only explicitly. Expiry hooks (e.g. cache
entries past their TTL) are callables registered in `EXPIRERS` and run by `winni_vacuum`."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Callable

from django.apps import apps
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from core import searchable
from core.logs import storage_op
from winni_site import pgtools
from winni_site.portable import model_exists


@dataclass(frozen=True)
class Retention:
    store: str
    setting: str  # WINNI_RETENTION_DAYS_<STORE>
    model: str  # "app_label.ModelName"
    age_field: str  # rows whose field is older than N days go
    # kind → lookup from the searchable model to the purged one, e.g. {"message": "conversation"}:
    # deleted searchable rows are announced so the embedding pipeline drops their vectors.
    searchables: dict[str, str] = field(default_factory=dict)
    keep: dict[str, Any] = field(default_factory=dict)  # rows matching this are never purged


RETENTION: list[Retention] = [
    # A conversation's age is its last activity: one still being written to is never purged.
    Retention("conversations", "WINNI_RETENTION_DAYS_CONVERSATIONS", "conversations.Conversation", "updated_at",
              {"message": "conversation"}),
    Retention("fiedler_results", "WINNI_RETENTION_DAYS_FIEDLER", "conversations.FiedlerResult", "created_at"),
    # A cache entry's age is when it was last asked; pinned entries stay.
    Retention("cache_entries", "WINNI_RETENTION_DAYS_CACHE", "librarian.QueryMemory", "last_asked",
              keep={"pinned": True}),
    # The LLM calls' accounting (one row per call): the budget reads today's rows only.
    Retention("llm_calls", "WINNI_RETENTION_DAYS_LLM_CALLS", "core.LLMCall", "started_at"),
]



def _expire_cache_entries(now: dt.datetime) -> int:
    """The answer cache's own clean-up: answers past their TTL are dropped (statistics stay)."""
    from memory.librarian.services import librarian_evict

    return librarian_evict()["expired"]


# name → callable(now) returning how many rows it expired; run by winni_vacuum before VACUUM.
EXPIRERS: dict[str, Callable[[dt.datetime], int]] = {"cache entries past their TTL": _expire_cache_entries}


def retention_purge(*, dry_run: bool = False, now: dt.datetime | None = None) -> dict[str, dict[str, Any]]:
    """Delete rows older than each store's WINNI_RETENTION_DAYS_* (0 = keep forever).

    Returns, per store: days, cutoff, how many rows (would) go. Each store is one transaction."""
    now = now or timezone.now()
    report: dict[str, dict[str, Any]] = {}
    for rule in RETENTION:
        days = int(getattr(settings, rule.setting, 0))
        if not days or not model_exists(rule.model):
            report[rule.store] = {"days": days, "cutoff": None, "rows": 0, "dry_run": dry_run}
            continue
        cutoff = now - dt.timedelta(days=days)
        model = apps.get_model(rule.model)
        with storage_op("retention.purge", store=rule.store, days=days, dry_run=dry_run) as log, transaction.atomic():
            doomed = model.objects.filter(**{f"{rule.age_field}__lt": cutoff}).exclude(**rule.keep)
            count = doomed.count()
            if not dry_run and count:
                for kind, lookup in rule.searchables.items():
                    if kind not in searchable.kinds():
                        continue
                    kind_model = searchable.get(kind).model
                    ids = kind_model._default_manager.filter(**{f"{lookup}__in": doomed}).values_list("pk", flat=True)
                    searchable.announce_changed(kind, list(ids))
                doomed.delete()
            log["rows"] = count
        report[rule.store] = {"days": days, "cutoff": cutoff.isoformat(), "rows": count, "dry_run": dry_run}
    return report


def _sizes() -> dict[str, dict[str, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname, pg_table_size(c.oid), pg_indexes_size(c.oid)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY c.relname"""
        )
        return {name: {"table_bytes": table, "index_bytes": index} for name, table, index in cursor.fetchall()}


def vacuum_run(*, analyze: bool = True, full: bool = False) -> dict[str, Any]:
    """Run the expiry hooks, then VACUUM (ANALYZE) every table; sizes before and after.

    VACUUM cannot run inside a transaction: call it outside any atomic block."""
    if connection.in_atomic_block:
        raise pgtools.OperationFailed("VACUUM cannot run inside a transaction")
    expired = {name: expire(timezone.now()) for name, expire in EXPIRERS.items()}
    before = _sizes()
    options = ", ".join(opt for opt, on in (("FULL", full), ("ANALYZE", analyze)) if on)
    with storage_op("vacuum.run", full=full) as log, connection.cursor() as cursor:
        cursor.execute(f"VACUUM ({options})" if options else "VACUUM")
        after = _sizes()
        log["tables"] = len(after)
    return {"expired": expired, "before": before, "after": after}
