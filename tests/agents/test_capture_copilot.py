"""End to end: the real GitHub Copilot CLI (npm @github/copilot), headless (`copilot -p`), offline
with a BYOK provider (COPILOT_OFFLINE, COPILOT_PROVIDER_BASE_URL: no GitHub sign-in) pointed at a
loopback fake Chat Completions API, with Winni's hooks and MCP server installed by
`manage.py install_agent_hooks --agent copilot` into a temporary HOME."""
import json
import re

import pytest
from django.core.management import call_command

from contexts import services as contexts
from tests.agent_cli import base_env, run_agent
from tests.fake_openai import FakeOpenAI

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


def test_a_headless_copilot_session_is_captured_turn_by_turn(winni_server, live_token, fake_api, agent_session):
    contexts.context_set(name="alpha", content=MARKER, actor="test")
    home, project = agent_session.home, agent_session.project
    (home / ".copilot").mkdir()
    (home / ".copilot" / "mcp-config.json").write_text(json.dumps({"mcpServers": {"other": {
        "type": "http", "url": "http://127.0.0.1:9/mcp", "tools": ["*"]}}}))
    call_command("install_agent_hooks", "--agent", "copilot", "--user", "--url", winni_server.url,
                 "--token", live_token)
    assert set(json.loads((home / ".copilot" / "mcp-config.json").read_text())["mcpServers"]) == {"other", "winni"}

    env = copilot_env(home, fake_api.url)
    first_prompt, *later = agent_session.PROMPTS
    first = run_agent("copilot", ["-p", first_prompt, "--allow-all-tools"], cwd=project, env=env)
    session = re.search(r"--resume=([0-9a-f-]{36})", first.stdout + first.stderr).group(1)
    for prompt in later:
        run_agent("copilot", [f"--resume={session}", "-p", prompt, "--allow-all-tools"], cwd=project, env=env)

    conversation, rows = agent_session.captured(session=session, source="copilot-cli", marker=MARKER)

    # SessionStart's text reached the model in the first request.
    assert MARKER in json.dumps(fake_api.model_requests()[0]["messages"])
    results = [m for request in fake_api.model_requests() for m in request["messages"] if m.get("role") == "tool"]
    assert results and MARKER in json.dumps(results[-1])

    # The session's events file this run wrote imports into the same session's transcript conversation.
    said = agent_session.imported(agent="copilot", conversation=conversation)
    assert [(r, c) for r, c in said if r != "tool"] == [(r, c) for r, c in rows if r != "tool"]
