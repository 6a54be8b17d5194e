"""The MCP logging proxy (seed 001 §3.3, option B): a streamable-HTTP relay in front of upstream
MCP servers that stores every `tools/call` and its result as `tool` messages.

Clients talk to `http://LISTEN/<name>/mcp`; the request goes to the upstream named <name> with its
body and headers unchanged (plus the headers configured for that upstream), and the upstream's
answer streams back unchanged. Logging never delays the traffic: the relay only puts records on
an in-memory queue, and one background thread writes them to the database."""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import queue
import threading
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

import httpx
from django.db import close_old_connections
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agents import capture

logger = logging.getLogger("winni.mcp_proxy")

# Hop-by-hop headers (RFC 9110 §7.6.1) and the ones the relay recomputes.
DROP_REQUEST_HEADERS = {"host", "content-length", "connection", "keep-alive", "transfer-encoding", "upgrade",
                        "accept-encoding", "te", "trailer", "proxy-authorization", "proxy-connection"}
DROP_RESPONSE_HEADERS = {"content-length", "connection", "keep-alive", "transfer-encoding", "content-encoding"}
# A response is only buffered (for logging) up to this size; the traffic itself is never cut.
LOG_BUFFER_LIMIT = 8 * 1024 * 1024


@dataclass
class Upstream:
    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)


class ProxyLog:
    """A bounded queue drained by one thread; a full queue drops records (counted), never blocks.
    `project`: the project (slug) every proxied session is stored in; None: global."""

    def __init__(self, maxsize: int = 10000, project: str | None = None) -> None:
        self.project = project
        self.queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize)
        self.dropped = 0
        self.stored = 0
        self.failed = 0
        self.thread = threading.Thread(target=self._run, name="mcp-proxy-log", daemon=True)
        self.thread.start()

    def put(self, record: dict[str, Any]) -> None:
        try:
            self.queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            record = self.queue.get()
            if record is None:
                return
            close_old_connections()
            try:
                capture.capture_proxy_message(**record, project=self.project)
                self.stored += 1
            except Exception:  # noqa: BLE001 - a logging failure must not stop the logger
                self.failed += 1
                logger.exception("storing a proxied tool call failed")
            finally:
                close_old_connections()

    def close(self, timeout: float = 10) -> None:
        self.queue.put(None)
        self.thread.join(timeout)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat()


def tool_calls(body: bytes) -> dict[Any, dict[str, Any]]:
    """The `tools/call` requests in a JSON-RPC body (one message or a batch), by request id."""
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        return {}
    messages = parsed if isinstance(parsed, list) else [parsed]
    calls = {}
    for message in messages:
        if isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message:
            params = found_params if isinstance(found_params := message.get("params"), dict) else {}
            calls[message["id"]] = {"name": params.get("name"), "arguments": params.get("arguments")}
    return calls


def responses_in(raw: bytes, content_type: str) -> list[dict[str, Any]]:
    """JSON-RPC responses in an upstream answer: a JSON body, or the `data:` lines of an SSE stream."""
    texts: list[str] = []
    text = raw.decode("utf-8", errors="replace")
    if "text/event-stream" in content_type:
        for event in text.replace("\r\n", "\n").split("\n\n"):
            data = "\n".join(line[5:].lstrip() for line in event.split("\n") if line.startswith("data:"))
            if data:
                texts.append(data)
    else:
        texts.append(text)
    found: list[dict[str, Any]] = []
    for chunk in texts:
        try:
            parsed = json.loads(chunk)
        except ValueError:
            continue
        for message in parsed if isinstance(parsed, list) else [parsed]:
            if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
                found.append(message)
    return found


def build_proxy_app(upstreams: dict[str, Upstream], log: ProxyLog) -> Starlette:
    client = httpx.AsyncClient(timeout=httpx.Timeout(30, read=None), follow_redirects=False)

    async def relay(request: Request) -> Response:
        upstream = upstreams.get(request.path_params["name"])
        if upstream is None:
            return JSONResponse({"error": f"no upstream named {request.path_params['name']!r}"}, status_code=404)
        body = await request.body()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in DROP_REQUEST_HEADERS}
        headers.update(upstream.headers)
        headers["accept-encoding"] = "identity"  # so the logged copy is readable as it passes
        calls = tool_calls(body) if request.method == "POST" else {}
        try:
            answer = await client.send(
                client.build_request(request.method, upstream.url, headers=headers, content=body,
                                     params=request.query_params), stream=True,
            )
        except httpx.HTTPError as exc:
            return JSONResponse({"error": f"upstream {upstream.name} unreachable: {exc}"}, status_code=502)
        client_host = request.client.host if request.client else "unknown"
        session = answer.headers.get("mcp-session-id") or request.headers.get("mcp-session-id") or client_host
        for request_id, call in calls.items():
            log.put({"upstream": upstream.name, "client_session": session, "direction": "call",
                     "request_id": request_id, "body": {"tool": call["name"], "arguments": call["arguments"]},
                     "captured_at": _now()})

        async def stream() -> AsyncIterator[bytes]:
            buffered = bytearray()
            try:
                async for chunk in answer.aiter_raw():
                    if calls and len(buffered) < LOG_BUFFER_LIMIT:
                        buffered += chunk
                    yield chunk
            finally:
                await answer.aclose()
                if calls:
                    _log_results(bytes(buffered), answer.headers.get("content-type", ""), calls, upstream, session)

        response_headers = {k: v for k, v in answer.headers.items() if k.lower() not in DROP_RESPONSE_HEADERS}
        return StreamingResponse(stream(), status_code=answer.status_code, headers=response_headers)

    def _log_results(raw: bytes, content_type: str, calls: dict[Any, dict[str, Any]], upstream: Upstream,
                     session: str) -> None:
        """Queue each result as soon as its whole JSON-RPC response has passed through."""
        for message in responses_in(raw, content_type):
            call = calls.pop(message["id"], None)
            if call is None:
                continue
            result = message.get("result") if "result" in message else {"error": message.get("error")}
            is_error = "error" in message or bool(isinstance(result, dict) and result.get("isError"))
            log.put({"upstream": upstream.name, "client_session": session, "direction": "result",
                     "request_id": message["id"], "body": {"tool": call["name"], "result": result},
                     "is_error": is_error, "captured_at": _now()})

    async def health(request: Request) -> Response:
        return JSONResponse({"upstreams": sorted(upstreams), "stored": log.stored, "failed": log.failed,
                             "dropped": log.dropped, "queued": log.queue.qsize()})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await client.aclose()

    methods = ["GET", "POST", "DELETE"]
    return Starlette(
        routes=[
            Route("/_proxy/health", health),
            Route("/{name}/mcp", relay, methods=methods),
            Route("/{name}", relay, methods=methods),
        ],
        lifespan=lifespan,
    )
