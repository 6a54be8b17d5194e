"""End to end: the real Gemini CLI (npm @google/gemini-cli), headless (`gemini -p`), against a
loopback fake Gemini API, with Winni's hooks and MCP server installed by
`manage.py install_agent_hooks --agent gemini` into a temporary HOME."""
import json
import os
import shutil
import subprocess
import uuid
from io import StringIO

import pytest
from django.core.management import call_command

from contexts import services as contexts
from conversations.models import Conversation
from tests.agent_cli import base_env, run_agent
from tests.fake_gemini import USE_TOOL, FakeGemini

pytestmark = [pytest.mark.live, pytest.mark.slow]

MARKER = "GEMINI-CONTEXT-9c41: run the linter before committing."


@pytest.fixture
def fake_api():
    fake = FakeGemini(tool_name="dewey_get_startup_context")
    yield fake
    fake.stop()


def test_a_headless_gemini_session_is_captured_turn_by_turn(winni_server, live_token, fake_api, tmp_path,
                                                             monkeypatch):
    contexts.context_set(name="alpha", content=MARKER, actor="test")
    home, project = tmp_path / "home", tmp_path / "alpha-repo"
    (home / ".gemini").mkdir(parents=True)
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "feature-x", str(project)], check=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(
        {"security": {"auth": {"selectedType": "gemini-api-key"}}, "ui": {"theme": "GitHub"}}))
    monkeypatch.setenv("HOME", str(home))
    call_command("install_agent_hooks", "--agent", "gemini", "--user", "--url", winni_server.url,
                 "--token", live_token)
    installed = json.loads((home / ".gemini" / "settings.json").read_text())
    assert installed["ui"] == {"theme": "GitHub"} and "winni" in installed["mcpServers"]

    env = base_env(home, GEMINI_API_KEY="fake", GOOGLE_GEMINI_BASE_URL=fake_api.url, GEMINI_CLI_TRUST_WORKSPACE="true")
    session = str(uuid.uuid4())
    common = ["-m", "gemini-fake", "--approval-mode", "yolo"]
    run_agent("gemini", ["--session-id", session, *common, "-p", "first question about alpha"], cwd=project, env=env)
    run_agent("gemini", ["--resume", "latest", *common, "-p", f"{USE_TOOL} please load the context"], cwd=project,
              env=env)
    run_agent("gemini", ["--resume", "latest", *common, "-p", "third question"], cwd=project, env=env)

    conversation = Conversation.objects.get(session_id=session, metadata__source="gemini-cli")
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

    # SessionStart's text reached the model with the first prompt.
    assert MARKER in json.dumps(fake_api.model_requests()[0]["contents"])
    responses = [part["functionResponse"] for request in fake_api.model_requests()
                 for content in request["contents"] for part in content.get("parts") or []
                 if "functionResponse" in part]
    assert responses and MARKER in json.dumps(responses[-1])

    # The chat files this run wrote import into the same session's transcript conversation.
    out = StringIO()
    call_command("import_agent_transcripts", "--agent", "gemini", "--no-progress", stdout=out, stderr=StringIO())
    assert "0 malformed" in out.getvalue(), out.getvalue()
    imported = Conversation.objects.get(session_id=session, metadata__source="gemini-cli-transcript")
    assert imported.project == conversation.project
    said = list(imported.messages.order_by("turn_number").values_list("role", "content"))
    assert [c for r, c in said if r == "assistant"] == [c for r, c in rows if r == "assistant"]
    assert [r for r, _ in said] == ["user", "assistant", "user", "tool", "assistant", "user", "assistant"]
    again = StringIO()
    call_command("import_agent_transcripts", "--agent", "gemini", "--no-progress", stdout=again, stderr=StringIO())
    assert " 0 message(s) added" in again.getvalue()
    if os.environ.get("WINNI_SAVE_GEMINI_SAMPLE"):
        shutil.copy(conversation.metadata["transcript_path"], os.environ["WINNI_SAVE_GEMINI_SAMPLE"])
