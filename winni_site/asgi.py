"""ASGI entry point: Django for everything, the MCP SDK's streamable-HTTP app at /mcp, static
files (STATIC_URL) sent directly (winni_site.static: no Django request thread, no console warning).

The mounted MCP app's lifespan must run at the top (it starts the session manager's task group),
so lifespan events go to it. Every request gets a request id (for the logs and the
X-Request-ID response header) and a body-size limit (413 beyond WINNI_MAX_REQUEST_BYTES).

Errors under /mcp are JSON like everywhere else: `/mcp/` is served as `/mcp` (no redirect), any
other path under it is a JSON 404, a plain-text error of the SDK (a bad Host or Origin header,
say) is rewritten into the error shape, and a token that was sent but is unknown or revoked is
reported as such, not as "Authentication required"."""
import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")
django_app = get_asgi_application()  # before anything imports models

from django.conf import settings  # noqa: E402

from core.errors import error_body  # noqa: E402
from core.logs import new_request_id, request_id_var  # noqa: E402
from winni_site.mcp import build_mcp_app  # noqa: E402
from winni_site.static import StaticFiles  # noqa: E402

mcp_app = build_mcp_app()
static_files = StaticFiles()
INVALID_TOKEN = "invalid or revoked token"
ERROR_CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}


async def _reject(send, status: int, code: str, message: str) -> None:
    body = json.dumps(error_body(code, message)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _json_errors(send, *, bearer: bool):
    """`send` for the MCP app: an error response that is not JSON becomes the error shape, and a
    401 for a request that carried a bearer token says the token is invalid or revoked (without
    saying which). Other responses pass through untouched (streamed)."""
    held: dict = {}

    async def wrapped(message):
        if message["type"] == "http.response.start":
            response_headers = dict(message.get("headers") or [])
            content_type = response_headers.get(b"content-type", b"")
            status = message["status"]
            if status == 401 and bearer or status >= 400 and b"json" not in content_type:
                held["start"] = message
                held["body"] = b""
                return
            return await send(message)
        if message["type"] == "http.response.body" and "start" in held:
            held["body"] += message.get("body", b"")
            if message.get("more_body"):
                return
            start = held.pop("start")
            status = start["status"]
            kept = [(key, value) for key, value in start.get("headers") or []
                    if key.lower() not in (b"content-type", b"content-length", b"www-authenticate")]
            if status == 401:
                body = json.dumps({"error": "invalid_token", "error_description": INVALID_TOKEN}).encode()
                kept.append((b"www-authenticate",
                             f'Bearer error="invalid_token", error_description="{INVALID_TOKEN}"'.encode()))
            else:
                text = held["body"].decode("utf-8", "replace").strip()[:500] or f"HTTP {status}"
                code = ERROR_CODES.get(status, "invalid" if status < 500 else "server_error")
                body = json.dumps(error_body(code, text)).encode()
            await send({**start, "headers": [*kept, (b"content-type", b"application/json"),
                                             (b"content-length", str(len(body)).encode())]})
            return await send({"type": "http.response.body", "body": body})
        return await send(message)

    return wrapped


# Django's ASGI handler runs each request's code on a thread made for it (a ThreadSensitiveContext of
# its own), and a database connection belongs to its thread: no REST request reused one
# (WINNI_DB_CONN_MAX_AGE), each opened a new PostgreSQL connection, ≈ 9 of the 10 ms a hook request
# that stores nothing took (1M-message store). Django's requests run instead on REQUEST_THREADS
# long-lived threads, one request at a time each (an outer ThreadSensitiveContext with that thread's
# executor, which Django's own defers to): their connections are kept, and checked before reuse
# (CONN_HEALTH_CHECKS), as under WSGI. A request finds a free thread or waits for one.
REQUEST_THREADS = 8
_request_threads: list[ThreadPoolExecutor] = []
_free_threads: asyncio.Queue | None = None


async def _django(scope, receive, send):
    global _free_threads
    if _free_threads is None:
        _free_threads = asyncio.Queue()
        for index in range(REQUEST_THREADS):
            _request_threads.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"django-request-{index}"))
            _free_threads.put_nowait(_request_threads[-1])
    executor = await _free_threads.get()
    try:
        async with ThreadSensitiveContext(executor=executor):
            await django_app(scope, receive, send)
    finally:
        _free_threads.put_nowait(executor)


def request_threads_shutdown() -> None:
    """Close the request threads' database connections and stop them (the tests, before their
    database is dropped); the next request starts new ones."""
    global _free_threads
    from django.db import connections

    for executor in _request_threads:
        executor.submit(connections.close_all).result()
        executor.shutdown()
    _request_threads.clear()
    _free_threads = None


def _warm_before_startup(receive):
    """`receive` for the lifespan: the startup event reaches the MCP app only after the recall path
    is warm (autorecall.recall_warm_up), and uvicorn listens only after the startup: until Winni can
    answer a prompt in time, a hook finds it not running (and spools) rather than slow."""

    async def wrapped():
        message = await receive()
        if message["type"] == "lifespan.startup":
            from agents import autorecall

            await asyncio.to_thread(autorecall.recall_warm_up)
        return message

    return wrapped


async def application(scope, receive, send):
    if scope["type"] == "lifespan":
        return await mcp_app(scope, _warm_before_startup(receive), send)
    if scope["type"] != "http":
        return await django_app(scope, receive, send)

    headers = dict(scope.get("headers") or [])
    request_id = headers.get(b"x-request-id", b"").decode("latin-1")[:64] or new_request_id()
    token = request_id_var.set(request_id)

    async def send_with_request_id(message):
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
        await send(message)

    try:
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > settings.WINNI_MAX_REQUEST_BYTES:
            return await _reject(
                send_with_request_id, 413, "too_large",
                f"request body is {int(length)} bytes; the limit is {settings.WINNI_MAX_REQUEST_BYTES} (WINNI_MAX_REQUEST_BYTES)",
            )
        path = scope.get("path", "")
        if path == "/mcp/":
            scope = {**scope, "path": "/mcp", "raw_path": b"/mcp"}
        elif path.startswith("/mcp/"):
            return await _reject(send_with_request_id, 404, "not_found",
                                 f"no MCP endpoint at {path}; the MCP endpoint is /mcp")
        if scope["path"] == "/mcp":
            bearer = headers.get(b"authorization", b"").lower().startswith(b"bearer ")
            return await mcp_app(scope, receive, _json_errors(send_with_request_id, bearer=bearer))
        static_file = static_files.find(scope["path"])
        if static_file is not None:
            return await static_files.serve(static_file, scope, send_with_request_id)
        return await _django(scope, receive, send_with_request_id)
    finally:
        request_id_var.reset(token)
