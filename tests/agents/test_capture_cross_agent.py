"""Cross-agent, with the real CLIs: what a Codex CLI session stores in Winni (a project decision
as the project's startup context, a memory) is in front of a Claude Code session of the same
project the next time: in its SessionStart text, and through recall."""
import json
import subprocess
import uuid

import pytest
from django.core.management import call_command

from conversations.models import Conversation
from memory.models import Memory
from tests.agents.test_capture_codex import run_codex_session
from tests.claude_cli import claude_env, run_claude
from tests.fake_anthropic import USE_TOOL, FakeAnthropic
from tests.fake_openai import FakeOpenAI

pytestmark = [pytest.mark.live, pytest.mark.slow]

DECISION = "DECISION-7731: the team chose PostgreSQL 17 for the ledger."
MEMORY = "Albatross ledger migrations run with zero downtime (decided in Codex)."


def test_what_a_codex_session_stored_reaches_a_claude_code_session_of_the_same_project(
        winni_server, live_token, tmp_path, monkeypatch):
    home, project = tmp_path / "home", tmp_path / "shared-repo"
    project.mkdir()
    home.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    monkeypatch.setenv("HOME", str(home))
    for agent in ("codex", "claude"):
        call_command("install_agent_hooks", "--agent", agent, "--user", "--url", winni_server.url,
                     "--token", live_token)

    # Codex: the first turn makes the project known; then its model stores a decision as the
    # project's startup context, and a memory of the project.
    codex_model = FakeOpenAI(tool_name="dewey_set_startup_context",
                             tool_args={"name": "ledger", "content": DECISION, "project": "shared-repo"})
    try:
        session = run_codex_session(home, project, codex_model, ["hello codex", "USE_TOOL record the decision"])
        codex_model.tool_name = "store_memory"
        codex_model.tool_args = {"content": MEMORY, "project": "shared-repo", "tags": ["decision"]}
        run_codex_session(home, project, codex_model, ["USE_TOOL remember the migration rule"])
    finally:
        codex_model.stop()
    codex = Conversation.objects.get(session_id=session, metadata__source="codex")
    assert codex.project.slug == "shared-repo"
    assert Memory.objects.get(content=MEMORY).project == codex.project

    # Claude Code, same project, the next morning: SessionStart brings the decision; recall finds the memory.
    claude_model = FakeAnthropic(tool_name="mcp__winni__winni_recall",
                                 tool_input={"query": "albatross ledger migrations", "project": "shared-repo"})
    try:
        common = ["--allowedTools=mcp__winni__winni_recall"]  # the MCP server: installed in ~/.claude.json
        claude_session = str(uuid.uuid4())
        env = claude_env(home, claude_model.url)
        run_claude(["-p", "--session-id", claude_session, *common, "what did we decide?"], cwd=project, env=env)
        run_claude(["-p", "--resume", claude_session, *common, f"{USE_TOOL} recall the migration rule"],
                   cwd=project, env=env)
        first = claude_model.main_requests()[0]
        assert DECISION in json.dumps(first["messages"])
        results = [block for request in claude_model.main_requests() for message in request["messages"]
                   if isinstance(message.get("content"), list) for block in message["content"]
                   if block.get("type") == "tool_result"]
        assert results and MEMORY in json.dumps(results[-1])
    finally:
        claude_model.stop()
    claude = Conversation.objects.get(session_id=claude_session, metadata__source="claude-code")
    assert claude.project == codex.project
