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


def capped_count(queryset: Any, up_to: int) -> tuple[int, bool]:
    """(total, total_is_estimate): exact up to `up_to` rows (at most that many are read), the
    planner's estimate beyond."""
    exact = queryset.order_by()[: up_to + 1].count()
    if exact <= up_to:
        return exact, False
    sql, params = queryset.order_by().values("pk").query.sql_with_params()
    return max(planner_rows(sql, params), exact), True
