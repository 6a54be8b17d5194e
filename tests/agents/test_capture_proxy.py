"""`manage.py mcp_proxy` in front of real upstream MCP servers (the official SDK's MCPServer under
uvicorn, one answering with SSE, one with JSON), with the official client on the other side."""
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from conversations.models import Conversation, Message
from tests.support import ROOT, McpClient, free_port

pytestmark = pytest.mark.live

UPSTREAM_SECRET = "Bearer upstream-secret"


def upstream_app(json_response: bool):
    server = MCPServer("upstream")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def explode() -> str:
        """Always fails."""
        raise ToolError("kaboom")

    app = server.streamable_http_app(stateless_http=True, json_response=json_response)

    async def require_auth(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization", b"").decode() != UPSTREAM_SECRET:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"upstream wants its token"})
            return
        await app(scope, receive, send)

    return require_auth


class ThreadServer:
    def __init__(self, app) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "upstream did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def upstreams():
    servers = {"sse": ThreadServer(upstream_app(json_response=False)), "json": ThreadServer(upstream_app(True))}
    yield servers
    for server in servers.values():
        server.stop()


@pytest.fixture(scope="module")
def proxy(upstreams, live_server_env):
    process, url = start_proxy(live_server_env, upstreams)
    yield url
    process.terminate()
    process.wait(10)


def wait_for_messages(count: int) -> None:
    """The proxy stores asynchronously (by design): wait until its queue has drained."""
    deadline = time.monotonic() + 15
    while Message.objects.count() < count and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.mark.parametrize("name", ["sse", "json"])
def test_tool_calls_are_forwarded_and_logged(proxy, name, transactional_db):
    client = McpClient(f"{proxy}/{name}", token=None, mode="legacy")
    assert set(client.list_tools()) == {"add", "explode"}
    assert client.call("add", {"a": 2, "b": 3}) == 5
    assert "kaboom" in client.call_error("explode", {})
    wait_for_messages(4)
    conversation = Conversation.objects.get(metadata__source="mcp-proxy")
    assert conversation.session_id == f"{name}:127.0.0.1"
    rows = list(conversation.messages.order_by("turn_number").values_list("role", "content", "metadata"))
    assert [r[0] for r in rows] == ["tool"] * 4
    assert [(m["direction"], m["is_error"]) for _, _, m in rows] == [
        ("call", False), ("result", False), ("call", False), ("result", True)]
    assert json.loads(rows[0][1]) == {"tool": "add", "arguments": {"a": 2, "b": 3}}
    assert json.loads(rows[1][1])["result"]["structuredContent"] == {"result": 5}
    assert "kaboom" in rows[3][1]


def test_unknown_upstreams_and_missing_auth(proxy, upstreams):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(urllib.request.Request(f"{proxy}/nope/mcp", body, headers), timeout=5)
    assert missing.value.code == 404
    # Straight to the upstream without the proxy's configured header: refused, so the proxy added it.
    direct = f"http://127.0.0.1:{upstreams['json'].port}/mcp"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(direct, body, headers), timeout=5)
    assert refused.value.code == 401


def start_proxy(env: dict, upstreams: dict) -> tuple[subprocess.Popen, str]:
    port = free_port()
    args = [sys.executable, "manage.py", "mcp_proxy", "--listen", f"127.0.0.1:{port}"]
    for name, server in upstreams.items():
        args += ["--upstream", f"{name}=http://127.0.0.1:{server.port}/mcp",
                 "--header", f"{name}=Authorization: {UPSTREAM_SECRET}"]
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url + "/_proxy/health", timeout=1)
            return process, url
        except OSError:
            assert process.poll() is None, process.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "proxy did not start"
            time.sleep(0.1)


def test_traffic_flows_when_logging_fails(upstreams, live_server_env):
    # A database that does not exist: every store fails, the forwarded calls must not notice.
    # (The test database is test_winni, or test_winni_gw0 ... under pytest-xdist.)
    env = {**live_server_env, "DATABASE_URL": re.sub(r"/test_winni(_gw\d+)?\?", "/no_such_db?", live_server_env["DATABASE_URL"])}
    assert env["DATABASE_URL"] != live_server_env["DATABASE_URL"]
    process, url = start_proxy(env, {"json": upstreams["json"]})
    try:
        client = McpClient(f"{url}/json", token=None, mode="legacy")
        assert [client.call("add", {"a": i, "b": 1}) for i in range(3)] == [1, 2, 3]
        deadline = time.monotonic() + 15
        while True:
            health = json.loads(urllib.request.urlopen(url + "/_proxy/health", timeout=5).read())
            if health["failed"] >= 6 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert (health["stored"], health["failed"]) == (0, 6)
    finally:
        process.terminate()
        process.wait(10)
