"""ASGI entry point: Django for everything, the MCP SDK's streamable-HTTP app at /mcp.

The mounted MCP app's lifespan must run at the top (it starts the session manager's task group),
so lifespan events go to it. Every request gets a request id (for the logs and the
X-Request-ID response header) and a body-size limit (413 beyond WINNI_MAX_REQUEST_BYTES)."""
import json
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")
django_app = get_asgi_application()  # before anything imports models

from django.conf import settings  # noqa: E402

from core.errors import error_body  # noqa: E402
from core.logs import new_request_id, request_id_var  # noqa: E402
from winni_site.mcp import build_mcp_app  # noqa: E402

mcp_app = build_mcp_app()


async def _reject(send, status: int, code: str, message: str) -> None:  # type: ignore[no-untyped-def]
    body = json.dumps(error_body(code, message)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def application(scope, receive, send):  # type: ignore[no-untyped-def]
    if scope["type"] == "lifespan":
        return await mcp_app(scope, receive, send)
    if scope["type"] != "http":
        return await django_app(scope, receive, send)

    headers = dict(scope.get("headers") or [])
    request_id = headers.get(b"x-request-id", b"").decode("latin-1")[:64] or new_request_id()
    token = request_id_var.set(request_id)

    async def send_with_request_id(message):  # type: ignore[no-untyped-def]
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
        if path == "/mcp" or path.startswith("/mcp/"):
            return await mcp_app(scope, receive, send_with_request_id)
        return await django_app(scope, receive, send_with_request_id)
    finally:
        request_id_var.reset(token)
