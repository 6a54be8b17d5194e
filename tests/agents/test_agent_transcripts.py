"""`manage.py import_agent_transcripts --agent codex|gemini|copilot` against session files the
real CLIs wrote (tests/data: made by tests/agents/test_capture_codex.py and tests/agents/test_capture_gemini.py)
and hand-broken copies of them."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from conversations.models import Conversation
from tests.support import ROOT

pytestmark = pytest.mark.django_db

CODEX_SAMPLE = ROOT / "tests" / "data" / "codex-0.169.0-rollout.jsonl"
CODEX_SESSION = json.loads(CODEX_SAMPLE.open().readline())["payload"]["id"]


def run(agent, *paths) -> str:
    out = StringIO()
    call_command("import_agent_transcripts", "--agent", agent, *map(str, paths), "--no-progress", stdout=out,
                 stderr=StringIO())
    return out.getvalue()


def test_a_codex_rollout_becomes_one_conversation_in_order():
    summary = run("codex", CODEX_SAMPLE)
    assert "1 session(s)" in summary and "8 message(s) added" in summary and "0 malformed" in summary
    conversation = Conversation.objects.get(session_id=CODEX_SESSION, metadata__source="codex-transcript")
    assert conversation.metadata["cwd"].endswith("/alpha-repo")
    assert conversation.metadata["transcript_path"] == str(CODEX_SAMPLE)
    rows = list(conversation.messages.order_by("turn_number").values_list("role", "content"))
    assert [role for role, _ in rows] == ["user", "assistant", "user", "tool", "tool", "assistant", "user",
                                          "assistant"]
    assert rows[0] == ("user", "first question about alpha")  # not Codex's <environment_context> block
    assert rows[-1] == ("assistant", "Reply to: third question")
    assert json.loads(rows[3][1])["tool_call"] == "dewey_get_startup_context"
    assert json.loads(rows[3][1])["namespace"] == "mcp__winni"


def test_importing_again_adds_nothing_and_a_folder_is_searched(tmp_path):
    folder = tmp_path / "sessions" / "2026" / "11" / "24"
    folder.mkdir(parents=True)
    (folder / CODEX_SAMPLE.name.replace("codex-0.169.0", "rollout-x")).write_text(CODEX_SAMPLE.read_text())
    (folder / "notes.jsonl").write_text("{}\n")  # not a rollout file: not read
    run("codex", CODEX_SAMPLE)
    again = run("codex", tmp_path / "sessions")
    assert "1 file(s)" in again and "0 message(s) added, 8 already present" in again
    assert Conversation.objects.count() == 1


def test_malformed_lines_are_counted_and_skipped(tmp_path):
    lines = CODEX_SAMPLE.read_text().splitlines()
    broken = tmp_path / "rollout-broken.jsonl"
    broken.write_text("\n".join(lines[:5] + ["{not json", '{"type": "response_item", "payload": 3}', "[]"]
                                + lines[5:]) + "\n")
    summary = run("codex", broken)
    assert "3 malformed line(s) skipped" in summary and "8 message(s) added" in summary


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(CommandError, match="no such file or directory"):
        run("codex", tmp_path / "missing")
    with pytest.raises(CommandError, match="invalid choice: 'cursor'"):
        run("cursor", tmp_path)


def test_with_no_path_the_agents_own_folder_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    day = tmp_path / "codex-home" / "sessions" / "2026" / "11" / "24"
    day.mkdir(parents=True)
    (day / "rollout-2026-11-24T09-00-00-x.jsonl").write_text(CODEX_SAMPLE.read_text())
    assert "8 message(s) added" in run("codex")


GEMINI_SAMPLE = ROOT / "tests" / "data" / "gemini-cli-0.61.0-chat.jsonl"


def test_a_gemini_chat_becomes_one_conversation_in_order(tmp_path):
    # Gemini keeps a chat in <tmp>/<project>/chats/, the project's folder in <tmp>/<project>/.project_root.
    chats = tmp_path / "tmp" / "alpha" / "chats"
    chats.mkdir(parents=True)
    (tmp_path / "tmp" / "alpha" / ".project_root").write_text("/work/alpha\n")
    (chats / GEMINI_SAMPLE.name).write_text(GEMINI_SAMPLE.read_text())
    (tmp_path / "tmp" / "alpha" / "logs.json").write_text("[]")  # not a chat: not read
    summary = run("gemini", tmp_path / "tmp")
    assert "1 file(s), 1 session(s)" in summary and "7 message(s) added" in summary and "0 malformed" in summary
    conversation = Conversation.objects.get(metadata__source="gemini-cli-transcript")
    assert conversation.metadata["cwd"] == "/work/alpha" and conversation.project.slug == "alpha"
    rows = list(conversation.messages.order_by("turn_number").values_list("role", "content"))
    assert [role for role, _ in rows] == ["user", "assistant", "user", "tool", "assistant", "user", "assistant"]
    # Neither the CLI's <session_context> nor Winni's own startup text count as the user's words.
    assert rows[0] == ("user", "first question about alpha")
    assert json.loads(rows[3][1])["tool_call"].endswith("dewey_get_startup_context")
    assert " 0 message(s) added" in run("gemini", chats / GEMINI_SAMPLE.name)
    broken = chats / "session-broken.jsonl"
    broken.write_text(GEMINI_SAMPLE.read_text() + "{not json\n" + json.dumps({"id": "x"}) + "\n")
    assert "2 malformed line(s) skipped" in run("gemini", broken)


COPILOT_SAMPLE = ROOT / "tests" / "data" / "agent_payloads" / "copilot-1.0.102-events.jsonl"


def test_a_copilot_session_becomes_one_conversation_in_order(tmp_path, monkeypatch):
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot"))
    folder = tmp_path / "copilot" / "session-state" / "fa168264-a0cc-4bac-a8db-128eb6a9dbbf"
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text(COPILOT_SAMPLE.read_text())
    (folder / "workspace.yaml").write_text("id: x\n")  # not an events file: not read
    summary = run("copilot")
    assert "1 file(s), 1 session(s)" in summary and "4 message(s) added" in summary and "0 malformed" in summary
    conversation = Conversation.objects.get(metadata__source="copilot-cli-transcript")
    assert conversation.session_id == "fa168264-a0cc-4bac-a8db-128eb6a9dbbf"
    assert conversation.metadata["cwd"] == "/tmp/cp1/proj" and conversation.metadata["git_branch"] == "main"
    rows = list(conversation.messages.order_by("turn_number").values_list("role", "content"))
    assert [role for role, _ in rows] == ["user", "tool", "tool", "assistant"]
    assert rows[0] == ("user", "USE_TOOL list the files")
    assert json.loads(rows[1][1])["tool_call"] == "bash" and "exit code 0" in json.loads(rows[2][1])["tool_result"]
    assert rows[3][1].startswith("Tool said: ")
    assert " 0 message(s) added" in run("copilot")
