"""The opening the real agents' capture tests share (test_capture_claude_code.py, _codex, _gemini,
_copilot): each runs its CLI headless in a scratch HOME, in a fresh git repository, for the same
three prompts, and Winni must hold the same turns whichever agent sent them. Here, not in a
helper module, so that pytest rewrites these asserts too (a failure shows the values)."""
from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import ClassVar

import pytest
from django.core.management import call_command

from conversations.models import Conversation


@dataclass(frozen=True)
class AgentSession:
    """Where an agent's CLI runs, what it is asked, and what its session must leave in Winni."""

    home: Path  # $HOME for the installer and the CLI: their settings files go here
    project: Path  # the git repository the session runs in
    # A question, one the fake model answers by calling dewey_get_startup_context (USE_TOOL: the
    # fake servers' word for "call your tool"; its result is quoted in the reply), a last question.
    PROMPTS: ClassVar[tuple[str, str, str]] = (
        "first question about alpha", "USE_TOOL please load the context", "third question")

    def captured(self, *, session: str, source: str, marker: str) -> tuple[Conversation, list[tuple[str, str]]]:
        """The hooks' conversation of the session, which sent PROMPTS while the startup context
        `marker` was active, and its (role, content) rows: its place (cwd, branch, project) and
        every turn in order, numbered without a gap, the tool's call and result between the prompt
        that asked for it and the reply quoting it."""
        conversation = Conversation.objects.get(session_id=session, metadata__source=source)
        assert conversation.metadata["cwd"] == str(self.project)
        assert conversation.metadata["git_branch"] == "feature-x"
        assert conversation.project.slug == "alpha-repo"
        turns = list(conversation.messages.order_by("turn_number").values_list("turn_number", "role", "content"))
        assert [turn for turn, _, _ in turns] == list(range(1, len(turns) + 1))
        rows = [(role, content) for _, role, content in turns]
        assert [role for role, _ in rows] == ["user", "assistant", "user", "tool", "assistant", "user", "assistant"]
        first, use_tool, last = self.PROMPTS
        assert [content for role, content in rows if role != "tool"][:3] == [first, f"Reply to: {first}", use_tool]
        assert rows[4][1].startswith("Tool said: ") and marker in rows[4][1]
        assert rows[5:] == [("user", last), ("assistant", f"Reply to: {last}")]
        tool = json.loads(rows[3][1])
        assert "dewey_get_startup_context" in tool["tool_name"] and marker in json.dumps(tool["tool_response"])
        return conversation, rows

    def imported(self, *, agent: str, conversation: Conversation) -> list[tuple[str, str]]:
        """The session files the run wrote, imported by `import_agent_transcripts`: into the same
        session's transcript conversation, in the same project, and a second import adds nothing.
        Its (role, content) rows."""
        out = StringIO()
        call_command("import_agent_transcripts", "--agent", agent, "--no-progress", stdout=out, stderr=StringIO())
        assert "0 malformed" in out.getvalue(), out.getvalue()
        imported = Conversation.objects.get(session_id=conversation.session_id,
                                            metadata__source=f"{conversation.metadata['source']}-transcript")
        assert imported.project == conversation.project
        again = StringIO()
        call_command("import_agent_transcripts", "--agent", agent, "--no-progress", stdout=again, stderr=StringIO())
        assert " 0 message(s) added" in again.getvalue()
        return list(imported.messages.order_by("turn_number").values_list("role", "content"))


@pytest.fixture
def agent_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AgentSession:
    """A scratch HOME (made $HOME, so the installer writes the agent's user settings there) and the
    repository `alpha-repo` on branch feature-x, without commits or remote: Winni knows the project
    by its git root's path."""
    home, project = tmp_path / "home", tmp_path / "alpha-repo"
    home.mkdir()
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "feature-x", str(project)], check=True)
    monkeypatch.setenv("HOME", str(home))
    return AgentSession(home=home, project=project)
