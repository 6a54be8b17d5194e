"""End to end: the real Gemini CLI (npm @google/gemini-cli), headless (`gemini -p`), against a
loopback fake Gemini API, with Winni's hooks and MCP server installed by
`manage.py install_agent_hooks --agent gemini` into a temporary HOME."""
import json
import os
import shutil
import uuid

import pytest
from django.core.management import call_command

from contexts import services as contexts
from tests.agent_cli import base_env, run_agent
from tests.fake_gemini import FakeGemini

pytestmark = [pytest.mark.live, pytest.mark.slow]

MARKER = "GEMINI-CONTEXT-9c41: run the linter before committing."


@pytest.fixture
def fake_api():
    fake = FakeGemini(tool_name="dewey_get_startup_context")
    yield fake
    fake.stop()


def test_a_headless_gemini_session_is_captured_turn_by_turn(winni_server, live_token, fake_api, agent_session):
    contexts.context_set(name="alpha", content=MARKER, actor="test")
    home, project = agent_session.home, agent_session.project
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(
        {"security": {"auth": {"selectedType": "gemini-api-key"}}, "ui": {"theme": "GitHub"}}))
    call_command("install_agent_hooks", "--agent", "gemini", "--user", "--url", winni_server.url,
                 "--token", live_token)
    installed = json.loads((home / ".gemini" / "settings.json").read_text())
    assert installed["ui"] == {"theme": "GitHub"} and "winni" in installed["mcpServers"]

    env = base_env(home, GEMINI_API_KEY="fake", GOOGLE_GEMINI_BASE_URL=fake_api.url, GEMINI_CLI_TRUST_WORKSPACE="true")
    session = str(uuid.uuid4())
    common = ["-m", "gemini-fake", "--approval-mode", "yolo"]
    first, *later = agent_session.PROMPTS
    run_agent("gemini", ["--session-id", session, *common, "-p", first], cwd=project, env=env)
    for prompt in later:
        run_agent("gemini", ["--resume", "latest", *common, "-p", prompt], cwd=project, env=env)

    conversation, rows = agent_session.captured(session=session, source="gemini-cli", marker=MARKER)

    # SessionStart's text reached the model with the first prompt.
    assert MARKER in json.dumps(fake_api.model_requests()[0]["contents"])
    responses = [part["functionResponse"] for request in fake_api.model_requests()
                 for content in request["contents"] for part in content.get("parts") or []
                 if "functionResponse" in part]
    assert responses and MARKER in json.dumps(responses[-1])

    # The chat files this run wrote import into the same session's transcript conversation.
    said = agent_session.imported(agent="gemini", conversation=conversation)
    assert [c for r, c in said if r == "assistant"] == [c for r, c in rows if r == "assistant"]
    assert [r for r, _ in said] == ["user", "assistant", "user", "tool", "assistant", "user", "assistant"]
    if os.environ.get("WINNI_SAVE_GEMINI_SAMPLE"):
        shutil.copy(conversation.metadata["transcript_path"], os.environ["WINNI_SAVE_GEMINI_SAMPLE"])
