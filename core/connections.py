"""Database connections of threads outside Django's request cycle that run on every call (the MCP
token check, hybrid recall's vector side).

Django's request cycle checks a reused connection with a `SELECT 1` before its first query
(CONN_HEALTH_CHECKS). These threads skip that round trip — one of the ≈ 10 an MCP search makes —
and deal with a broken connection when it shows instead."""
from __future__ import annotations

import time
from typing import Any, Callable

from django.db import InterfaceError, OperationalError, connection


def run_unchecked(work: Callable[[], Any], *, retry: bool) -> Any:
    """`work()` on this thread's connection, kept between calls (up to WINNI_DB_CONN_MAX_AGE) and
    not health-checked first. A connection that turns out broken (the database restarted since its
    last use) is dropped; with `retry` (for read-only work, safe to repeat) the work then runs once
    more on a new one, otherwise the error goes to the caller."""
    try:
        return work()
    except (OperationalError, InterfaceError):
        connection.close()
        if not retry:
            raise
        return work()
    finally:
        if connection.connection is not None and connection.close_at is not None \
                and time.monotonic() >= connection.close_at:
            connection.close()
