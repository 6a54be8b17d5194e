"""End to end: the real Claude Code CLI, headless, against a fake Messages API, with Winni's hooks
installed by `manage.py install_claude_hooks` and Winni's MCP tools configured."""
import json
import os
import shutil
import subprocess
import uuid

import pytest
from django.core.management import call_command

from contexts import services as contexts
from conversations.models import Conversation
from tests.claude_cli import claude_env, run_claude
from tests.fake_anthropic import USE_TOOL, FakeAnthropic

pytestmark = [pytest.mark.live, pytest.mark.slow]

MARKER = "ALPHA-CONTEXT-7f3a: always run the linter before committing."


@pytest.fixture
def fake_api():
    fake = FakeAnthropic(tool_name="mcp__winni__dewey_get_startup_context")
    yield fake
    fake.stop()


def test_a_headless_session_is_captured_turn_by_turn(winni_server, live_token, fake_api, agent_session):
    contexts.context_set(name="alpha", content=MARKER, actor="test")
    home, project = agent_session.home, agent_session.project
    (home / ".claude").mkdir()
    # Existing user settings must survive the installer.
    (home / ".claude" / "settings.json").write_text(json.dumps(
        {"theme": "dark", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}
    ))
    call_command("install_claude_hooks", "--user", "--url", winni_server.url, "--token", live_token)
    installed = json.loads((home / ".claude" / "settings.json").read_text())
    assert installed["theme"] == "dark" and len(installed["hooks"]["Stop"]) == 2

    # The installer also put Winni's MCP server in ~/.claude.json (user scope), which Claude Code reads.
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["winni"]["url"] == f"{winni_server.url}/mcp"
    env = claude_env(home, fake_api.url)
    session = str(uuid.uuid4())
    # "=": the option takes several values and would swallow the prompt.
    common = ["--allowedTools=mcp__winni__dewey_get_startup_context"]
    first, *later = agent_session.PROMPTS
    run_claude(["-p", "--session-id", session, *common, first], cwd=project, env=env)
    for prompt in later:
        out = run_claude(["-p", "--resume", session, *common, prompt], cwd=project, env=env)
    assert f"Reply to: {later[-1]}" in out

    # The tool turn: the PostToolUse hook stored the call and its result between prompt and reply.
    conversation, rows = agent_session.captured(session=session, source="claude-code", marker=MARKER)
    assert json.loads(rows[3][1])["tool_name"] == "mcp__winni__dewey_get_startup_context"
    # The project: a git repository without commits or remote is known by its git root's path.
    assert list(conversation.project.keys.values_list("kind", "value")) == [("path", str(project))]
    assert conversation.metadata["transcript_path"].endswith(f"{session}.jsonl")

    # SessionStart injected the active context: the fake model saw it before any tool ran.
    first_main = fake_api.main_requests()[0]
    assert MARKER in json.dumps(first_main["messages"])
    # The MCP tool ran in Winni (with the Bearer header) and its result reached the model.
    tool_results = [
        block for request in fake_api.main_requests() for message in request["messages"]
        if isinstance(message.get("content"), list) for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert tool_results and MARKER in json.dumps(tool_results[-1])
    # Claude Code gives the model the structuredContent, as compact JSON.
    assert json.loads(tool_results[-1]["content"])["result"]["content"] == MARKER

    # Each `claude -p` run ended its session (SessionEnd): Winni checkpointed it into the project's
    # medallion, and the next run's SessionStart printed that medallion.
    from medallions.models import Medallion, MedallionJob

    assert MedallionJob.objects.filter(status="done").count() == 3
    medallion = Medallion.objects.get()
    assert medallion.tags == ["repo:alpha-repo"]
    second_run = [r for r in fake_api.main_requests() if f"{USE_TOOL} please" in json.dumps(r["messages"])][0]
    assert "Project checkpoints for alpha-repo" in json.dumps(second_run["messages"])
    assert "Project checkpoints" not in json.dumps(first_main["messages"])

    # Save the transcript as a sample for the import tests when asked to.
    if os.environ.get("WINNI_SAVE_TRANSCRIPT_SAMPLE"):
        shutil.copy(conversation.metadata["transcript_path"], os.environ["WINNI_SAVE_TRANSCRIPT_SAMPLE"])


DECISION = "We decided to use psycopg 3 as the database driver for the shop, not asyncpg: native Django support."


def _requests_with(fake: FakeAnthropic, words: str) -> list[dict]:
    return [r for r in fake.main_requests() if words in json.dumps(r["messages"])]


@pytest.mark.parametrize("hook_type", ["command", "http"])
def test_automatic_recall_reaches_the_model(winni_server, live_token, tmp_path, monkeypatch, hook_type):
    """A first session settles a decision and names a file; a second session's related prompt makes
    the model's request hold that decision with its source, an unrelated prompt adds nothing, and a
    third session reading the file gets what was said about it. Both kinds of hook: the command
    hook (claude_hook.py) and hooks of type http (Claude Code posts to Winni itself)."""
    home, project = tmp_path / "home", tmp_path / "shop-repo"
    (home / ".claude").mkdir(parents=True)
    (project / "billing").mkdir(parents=True)
    (project / "billing" / "invoices.py").write_text("def render():\n    return 'pdf'\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    monkeypatch.setenv("HOME", str(home))
    call_command("install_claude_hooks", "--user", "--url", winni_server.url, "--token", live_token,
                 "--hook-type", hook_type)
    fake = FakeAnthropic(tool_name="Read", tool_input={"file_path": str(project / "billing" / "invoices.py")})
    try:
        env = claude_env(home, fake.url)
        first = str(uuid.uuid4())
        run_claude(["-p", "--session-id", first, f"{DECISION} The PDF layout lives in billing/invoices.py."],
                   cwd=project, env=env)

        second = str(uuid.uuid4())
        run_claude(["-p", "--session-id", second, "Which database driver did we choose for the shop, psycopg or asyncpg?"],
                   cwd=project, env=env)
        asked = _requests_with(fake, "Which database driver did we choose")[0]
        seen = json.dumps(asked["messages"])
        assert "Winni recalled" in seen and "psycopg 3 as the database driver" in seen
        # The source: the first session's conversation (the start of its id) and its turn.
        first_conversation = Conversation.objects.get(session_id=first)
        assert f"conversation {str(first_conversation.pk)[:8]}]" in seen
        run_claude(["-p", "--resume", second, "run the tests"], cwd=project, env=env)
        plain = _requests_with(fake, "run the tests")[0]
        last_user = [m for m in plain["messages"] if m["role"] == "user"][-1]
        assert "Winni recalled" not in json.dumps(last_user)

        third = str(uuid.uuid4())
        run_claude(["-p", "--session-id", third, "--allowedTools=Read", f"{USE_TOOL} open the invoices module"],
                   cwd=project, env=env)
        after_tool = [r for r in _requests_with(fake, f"{USE_TOOL} open the invoices module")
                      if "tool_result" in json.dumps(r["messages"])]
        assert after_tool, "the fake model never saw the Read result"
        assert "Winni recalled about billing/invoices.py" in json.dumps(after_tool[0]["messages"])
    finally:
        fake.stop()

    from agents.models import Injection

    assert set(Injection.objects.values_list("session_id", "trigger")) == {(second, "prompt"), (third, "file")}
    # Every prompt was captured, in one project (the repository's).
    conversations = Conversation.objects.filter(session_id__in=[first, second, third])
    assert conversations.count() == 3 and len({c.project_id for c in conversations}) == 1
    assert Conversation.objects.get(session_id=second).messages.filter(role="user").count() == 2
