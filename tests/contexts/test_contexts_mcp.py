"""Startup context tools, prompt and resources through the real MCP transport."""
import asyncio

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from contexts import services
from contexts.models import StartupContext, StartupContextAudit

pytestmark = pytest.mark.live


def test_set_get_list_delete(mcp):
    assert mcp.call("dewey_get_startup_context") is None
    set_ = mcp.call("dewey_set_startup_context", {"name": "alpha", "content": "# Alpha\nremember X"})
    assert set_["name"] == "alpha" and set_["is_active"] is True and set(set_) == {"context_id", "id", "name", "project", "is_active", "created_at"}
    mcp.call("dewey_set_startup_context", {"name": "beta", "content": "# Beta", "set_active": False})
    got = mcp.call("dewey_get_startup_context")
    assert (got["name"], got["content"], got["is_active"]) == ("alpha", "# Alpha\nremember X", True)
    assert mcp.call("dewey_get_startup_context", {"name": "beta"})["is_active"] is False
    listed = mcp.call("dewey_list_startup_contexts")["contexts"]
    assert [(c["name"], "content" in c) for c in listed] == [("alpha", False), ("beta", False)]
    assert mcp.call("dewey_list_startup_contexts", {"include_content": True})["contexts"][1]["content"] == "# Beta"
    assert mcp.call("dewey_delete_startup_context", {"name": "alpha", "force": True}) == {"deleted": True}
    assert mcp.call("dewey_get_startup_context") is None
    # The audit rows carry the token's name.
    assert set(StartupContextAudit.objects.values_list("actor", flat=True)) == {"alice"}


def test_bad_input_is_an_error_and_writes_nothing(mcp_legacy):
    assert "name" in mcp_legacy.call_error("dewey_set_startup_context", {"name": "  ", "content": "x"})
    assert "content" in mcp_legacy.call_error("dewey_set_startup_context", {"name": "a", "content": ""})
    too_big = mcp_legacy.call_error("dewey_set_startup_context", {"name": "a", "content": "x" * (1024 * 1024 + 1)})
    assert "too_large" in too_big and "content" in too_big
    assert "nope" in mcp_legacy.call_error("dewey_get_startup_context", {"name": "nope"})
    assert StartupContext.objects.count() == 0
    mcp_legacy.call("dewey_set_startup_context", {"name": "a", "content": "x"})
    assert "force" in mcp_legacy.call_error("dewey_delete_startup_context", {"name": "a"})
    assert StartupContext.objects.filter(is_active=True).count() == 1


def _session(url: str, token: str, fn):
    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            async with Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy") as client:
                return await fn(client)

    return asyncio.run(main())


def test_prompt_and_resource(winni_server, live_token):
    empty = _session(winni_server.url, live_token, lambda c: c.get_prompt("startup_context"))
    assert empty.messages[0].content.text == "No startup context is active."
    services.context_set(name="alpha", content="# Alpha context", actor="test")

    async def read(client):
        return (await client.get_prompt("startup_context"), await client.list_resource_templates(),
                await client.read_resource("winni://contexts/alpha"))

    prompt, templates, resource = _session(winni_server.url, live_token, read)
    assert prompt.messages[0].content.text == "# Alpha context"
    assert "winni://contexts/{name}" in [t.uri_template for t in templates.resource_templates]
    assert resource.contents[0].text == "# Alpha context"

    async def read_missing(client):
        try:
            await client.read_resource("winni://contexts/missing")
        except Exception as exc:  # noqa: BLE001 - the SDK raises the server's error
            return str(exc)
        return "no error"

    assert "missing" in _session(winni_server.url, live_token, read_missing)


def test_parallel_activations_over_rest_and_mcp_leave_one_active_and_no_500(winni_server, live_token):
    import concurrent.futures

    import httpx

    for i in range(10):
        services.context_set(name=f"ctx-{i}", content=f"content {i}", set_active=False, actor="setup")
    headers = {"Authorization": f"Bearer {live_token}"}

    def activate(i: int) -> int:
        if i % 2:
            return httpx.post(f"{winni_server.url}/api/v1/contexts/ctx-{i}/activate/", headers=headers, timeout=60).status_code
        from tests.support import McpClient

        McpClient(winni_server.url, live_token).call("dewey_set_startup_context", {"name": f"ctx-{i}", "content": f"v2 {i}"})
        return 200

    with concurrent.futures.ThreadPoolExecutor(10) as pool:
        statuses = list(pool.map(activate, range(10)))
    assert statuses == [200] * 10
    assert StartupContext.objects.filter(is_active=True).count() == 1
    assert StartupContextAudit.objects.filter(action="activate").count() == 10
