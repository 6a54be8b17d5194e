"""Counting rows without reading them all: PostgreSQL's estimate beyond a bound."""
from __future__ import annotations

import json
from typing import Any

from django.db import connection


def planner_rows(sql: str, params: Any) -> int:
    """PostgreSQL's estimate of how many rows `sql` returns (EXPLAIN, nothing is executed)."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    plan = plan if isinstance(plan, list) else json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


def capped_count(queryset: Any, up_to: int, *, estimate_first: bool = False) -> tuple[int, bool]:
    """(total, total_is_estimate): exact up to `up_to` rows (at most that many are read), the
    planner's estimate beyond. `estimate_first` (a size that decides how to search, not one shown
    to anyone): the planner is asked first, and the rows are counted only when it expects at most
    `up_to` of them. Counting a project's memories with the global ones (10,500 rows scattered over
    5,600 pages of 100K memories) cost more than searching them."""
    sql, params = queryset.order_by().values("pk").query.sql_with_params()
    if estimate_first:
        estimate = planner_rows(sql, params)
        if estimate > up_to:
            return estimate, True
    exact = queryset.order_by()[: up_to + 1].count()
    if exact <= up_to:
        return exact, False
    return max(estimate if estimate_first else planner_rows(sql, params), exact), True


def capped_keys(queryset: Any, up_to: int) -> tuple[list[Any] | None, int]:
    """(primary keys, their number) of a queryset of at most `up_to` rows, read once (at most
    up_to + 1 of them); (None, size) for a larger one, with the planner's estimate as its size
    when it expects more than `up_to` (then nothing is read), else the larger of that and the
    rows read. For a caller that goes on with the rows themselves: their keys cost what counting
    them does, and a later statement looks rows up by them instead of running the query again."""
    sql, params = queryset.order_by().values("pk").query.sql_with_params()
    estimate = planner_rows(sql, params)
    if estimate > up_to:
        return None, estimate
    keys = list(queryset.order_by().values_list("pk", flat=True)[: up_to + 1])
    if len(keys) > up_to:
        return None, max(estimate, len(keys))
    return keys, len(keys)
