"""Database connections of threads outside Django's request cycle that run on every call (the MCP
token check, the helper threads that do part of a request's work beside it: hybrid recall's
vector side, a search page's snippets, a prompt's capture).

Django's request cycle checks a reused connection with a `SELECT 1` before its first query
(CONN_HEALTH_CHECKS). These threads skip that round trip — one of the ≈ 10 an MCP search makes —
and deal with a broken connection when it shows instead."""
from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, TypeVar

from django.db import InterfaceError, OperationalError, connection

T = TypeVar("T")


def run_unchecked(work: Callable[[], T], *, retry: bool) -> T:
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


_helper_pool: ThreadPoolExecutor | None = None
_helper_lock = threading.Lock()


def _helpers() -> ThreadPoolExecutor:
    global _helper_pool
    with _helper_lock:
        if _helper_pool is None:
            _helper_pool = ThreadPoolExecutor(max_workers=HELPERS, thread_name_prefix="winni-recall")
        return _helper_pool


HELPERS = 4
_helper_slots = threading.BoundedSemaphore(HELPERS)


def in_background(work: Callable[..., T], *args: Any) -> Future[T] | None:
    """`work(*args)` started in a helper thread, or None when every helper is busy (a loaded
    process: the caller then does the work itself rather than queue behind other requests).
    Database work must bring its own connection (run_unchecked) and not need the caller's
    uncommitted rows."""
    slots = _helper_slots  # released below even if the module's semaphore is replaced meanwhile
    if not slots.acquire(blocking=False):
        return None
    future = _helpers().submit(work, *args)
    future.add_done_callback(lambda _: slots.release())
    return future


def beside(work: Callable[[], T]) -> Callable[[], T]:
    """`work()` (reads of committed rows) started in a helper thread, on that thread's connection,
    while the caller goes on; returns the function that waits for its result. The caller's thread
    does the work itself, when it asks for the result, if the work could not start there (inside
    a transaction: the helper's connection would not see the caller's uncommitted rows; every
    helper busy) or the helper's connection broke (a database restart since its last use: it is
    not health-checked first, and was dropped)."""
    pending = None if connection.in_atomic_block else in_background(lambda: run_unchecked(work, retry=False))

    def result() -> T:
        if pending is not None:
            try:
                return pending.result()
            except (OperationalError, InterfaceError):
                pass
        return work()

    return result


def helpers_shutdown() -> None:
    """Stop the helper threads; their connections close as the threads end (a test database can
    then be dropped)."""
    global _helper_pool
    with _helper_lock:
        pool, _helper_pool = _helper_pool, None
    if pool is not None:
        pool.shutdown(wait=True)
        import gc

        gc.collect()
