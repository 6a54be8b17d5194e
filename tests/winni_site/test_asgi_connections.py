"""REST requests through the ASGI application (winni_site.asgi) run on kept threads, so each reuses
its thread's database connection: Django's ASGI handler alone gave every request a thread of its
own, hence a new PostgreSQL connection (≈ 9 ms of a hook request's 10)."""
import asyncio
import threading

import pytest
from django.core.signals import request_finished
from django.db import connection

from winni_site import auth

pytestmark = pytest.mark.django_db(transaction=True)


async def _get(application, path: str, token: str) -> int:  # type: ignore[no-untyped-def]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode())],
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 9020)}
    received = asyncio.Event()

    async def receive():  # type: ignore[no-untyped-def]
        if not received.is_set():
            received.set()
            return {"type": "http.request", "body": b"", "more_body": False}
        await asyncio.sleep(3600)  # the client stays connected

    sent: list[dict] = []

    async def send(message):  # type: ignore[no-untyped-def]
        sent.append(message)

    await application(scope, receive, send)
    return sent[0]["status"]


def test_rest_requests_reuse_their_threads_database_connection():
    from winni_site.asgi import REQUEST_THREADS, application, request_threads_shutdown

    _, token = auth.token_create(name="alice")
    seen: list[tuple[int, int | None]] = []

    def record(**kwargs) -> None:  # type: ignore[no-untyped-def]
        # After Django's own receiver (close_old_connections), on the thread that ran the request.
        seen.append((threading.get_ident(), connection.connection.info.backend_pid if connection.connection else None))

    async def requests() -> list[int]:
        # One after the other: a freed thread waits behind the others, so the last of
        # REQUEST_THREADS + 1 requests runs on the first one's thread again.
        return [await _get(application, "/api/v1/projects/", token) for _ in range(REQUEST_THREADS + 1)]

    request_finished.connect(record)
    try:
        statuses = asyncio.run(requests())
    finally:
        request_finished.disconnect(record)
        request_threads_shutdown()
    assert statuses == [200] * (REQUEST_THREADS + 1)
    assert all(pid is not None for _, pid in seen)
    threads = [thread for thread, _ in seen]
    assert len(set(threads)) == REQUEST_THREADS and threads[-1] == threads[0]
    # The first thread's connection, opened by the first request, served the last one too.
    assert seen[-1][1] == seen[0][1]
