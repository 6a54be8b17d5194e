"""End to end: the real GitHub Copilot CLI (npm @github/copilot), headless (`copilot -p`), offline
with a BYOK provider (COPILOT_OFFLINE, COPILOT_PROVIDER_BASE_URL: no GitHub sign-in) pointed at a
loopback fake Chat Completions API, with Winni's hooks and MCP server installed by
`manage.py install_agent_hooks --agent copilot` into a temporary HOME."""
import json
import re
import subprocess
from io import StringIO

import pytest
from django.core.management import call_command

from contexts import services as contexts
from conversations.models import Conversation
from tests.agent_cli import base_env, run_agent
from tests.fake_openai import USE_TOOL, FakeOpenAI

pytestmark = [pytest.mark.live, pytest.mark.slow]

MARKER = "COPILOT-CONTEXT-3e7b: run the linter before committing."


@pytest.fixture
def fake_api():
    fake = FakeOpenAI(tool_name="dewey_get_startup_context")
    yield fake
    fake.stop()


def copilot_env(home, fake_url):
    return base_env(home, COPILOT_OFFLINE="true", COPILOT_PROVIDER_BASE_URL=f"{fake_url}/v1",
                    COPILOT_PROVIDER_TYPE="openai", COPILOT_PROVIDER_API_KEY="fake", COPILOT_MODEL="fake-model",
                    COPILOT_AUTO_UPDATE="false")


def test_a_headless_copilot_session_is_captured_turn_by_turn(winni_server, live_token, fake_api, tmp_path,
                                                              monkeypatch):
    contexts.context_set(name="alpha", content=MARKER, actor="test")
    home, project = tmp_path / "home", tmp_path / "alpha-repo"
    (home / ".copilot").mkdir(parents=True)
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "feature-x", str(project)], check=True)
    (home / ".copilot" / "mcp-config.json").write_text(json.dumps({"mcpServers": {"other": {
        "type": "http", "url": "http://127.0.0.1:9/mcp", "tools": ["*"]}}}))
    monkeypatch.setenv("HOME", str(home))
    call_command("install_agent_hooks", "--agent", "copilot", "--user", "--url", winni_server.url,
                 "--token", live_token)
    assert set(json.loads((home / ".copilot" / "mcp-config.json").read_text())["mcpServers"]) == {"other", "winni"}

    env = copilot_env(home, fake_api.url)
    first = run_agent("copilot", ["-p", "first question about alpha", "--allow-all-tools"], cwd=project, env=env)
    session = re.search(r"--resume=([0-9a-f-]{36})", first.stdout + first.stderr).group(1)
    for prompt in (f"{USE_TOOL} please load the context", "third question"):
        run_agent("copilot", [f"--resume={session}", "-p", prompt, "--allow-all-tools"], cwd=project, env=env)

    conversation = Conversation.objects.get(session_id=session, metadata__source="copilot-cli")
    assert conversation.metadata["cwd"] == str(project)
    assert conversation.metadata["git_branch"] == "feature-x"
    assert conversation.project.slug == "alpha-repo"
    rows = list(conversation.messages.order_by("turn_number").values_list("role", "content"))
    assert [role for role, _ in rows] == ["user", "assistant", "user", "tool", "assistant", "user", "assistant"]
    assert [c for r, c in rows if r != "tool"][:3] == [
        "first question about alpha", "Reply to: first question about alpha", f"{USE_TOOL} please load the context"]
    assert rows[4][1].startswith("Tool said: ") and MARKER in rows[4][1]
    assert rows[5:] == [("user", "third question"), ("assistant", "Reply to: third question")]
    tool = json.loads(rows[3][1])
    assert "dewey_get_startup_context" in tool["tool_name"] and MARKER in json.dumps(tool["tool_response"])

    # SessionStart's text reached the model in the first request.
    assert MARKER in json.dumps(fake_api.model_requests()[0]["messages"])
    results = [m for request in fake_api.model_requests() for m in request["messages"] if m.get("role") == "tool"]
    assert results and MARKER in json.dumps(results[-1])

    # The session's events file this run wrote imports into the same session's transcript conversation.
    out = StringIO()
    call_command("import_agent_transcripts", "--agent", "copilot", "--no-progress", stdout=out, stderr=StringIO())
    assert "0 malformed" in out.getvalue(), out.getvalue()
    imported = Conversation.objects.get(session_id=session, metadata__source="copilot-cli-transcript")
    assert imported.project == conversation.project
    said = list(imported.messages.order_by("turn_number").values_list("role", "content"))
    assert [(r, c) for r, c in said if r != "tool"] == [(r, c) for r, c in rows if r != "tool"]
    again = StringIO()
    call_command("import_agent_transcripts", "--agent", "copilot", "--no-progress", stdout=again, stderr=StringIO())
    assert " 0 message(s) added" in again.getvalue()
