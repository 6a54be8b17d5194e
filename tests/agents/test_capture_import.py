"""`manage.py import_claude_transcripts` against a real Claude Code 2.1.197 transcript (made by
tests/agents/test_capture_claude_code.py) and hand-broken copies of it."""
import json
import shutil
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from agents import capture
from conversations.models import Conversation, Message
from tests.support import ROOT

pytestmark = pytest.mark.django_db

SAMPLE = ROOT / "tests" / "data" / "claude-code-2.1.197-session.jsonl"
SESSION = json.loads(next(line for line in SAMPLE.open() if '"sessionId"' in line))["sessionId"]


def run(*paths) -> str:
    out = StringIO()
    call_command("import_claude_transcripts", *map(str, paths), "--no-progress", stdout=out, stderr=StringIO())
    return out.getvalue()


def test_a_real_transcript_becomes_one_conversation_in_order():
    summary = run(SAMPLE)
    assert "8 message(s) added" in summary and "0 malformed" in summary
    conversation = Conversation.objects.get(session_id=SESSION, metadata__source="claude-code-transcript")
    assert conversation.metadata["claude_code_version"] == "2.1.197"
    assert conversation.metadata["transcript_path"] == str(SAMPLE)
    rows = list(conversation.messages.order_by("turn_number").values_list("role", "content", "metadata"))
    said = [(role, content[:36]) for role, content, _ in rows]
    assert said[:3] == [("user", "first question about alpha"), ("assistant", "Reply to: first question about alpha"),
                        ("user", "USE_TOOL please load the context")]
    assert [role for role, _, _ in rows] == ["user", "assistant", "user", "tool", "tool", "assistant", "user",
                                             "assistant"]
    assert [meta["block_type"] for _, _, meta in rows if meta["block_type"] != "text"] == ["tool_use", "tool_result"]
    tool_use = json.loads(next(c for r, c, m in rows if m["block_type"] == "tool_use"))
    assert tool_use["tool_use"] == "mcp__winni__dewey_get_startup_context"
    assert rows[-1][:2] == ("assistant", "Reply to: third question")
    # Timestamps come from the transcript, not the import time.
    first_line = json.loads(next(line for line in SAMPLE.open() if '"type":"user"' in line))
    assert conversation.messages.order_by("turn_number").first().created_at.isoformat()[:19] == first_line["timestamp"][:19]


def test_reimport_adds_nothing(tmp_path):
    run(SAMPLE)
    count = Message.objects.count()
    # A folder holding it (tests/data holds other agents' files too: tests/data/traffic).
    (tmp_path / "projects").mkdir()
    shutil.copy(SAMPLE, tmp_path / "projects" / SAMPLE.name)
    summary = run(SAMPLE, tmp_path / "projects")
    assert "0 message(s) added" in summary and f"{2 * count} already present" in summary
    assert Message.objects.count() == count and Conversation.objects.count() == 1


def test_malformed_lines_are_counted_and_skipped(tmp_path):
    broken = tmp_path / "broken.jsonl"
    lines = SAMPLE.read_text().splitlines()
    thinking = json.loads(next(line for line in lines if '"type":"assistant"' in line))
    thinking["uuid"] = "11111111-2222-3333-4444-555555555555"
    thinking["message"]["content"] = [{"type": "thinking", "thinking": "hmm", "signature": "x"},
                                      {"type": "text", "text": "after thinking"}]
    no_uuid = json.loads(next(line for line in lines if '"type":"user"' in line))
    del no_uuid["uuid"]
    bad_content = {**json.loads(next(line for line in lines if '"type":"user"' in line)), "uuid": "u-bad"}
    bad_content["message"] = {"role": "user", "content": 42}
    broken.write_text("\n".join(
        ["{not json", *lines[:6], "[1,2]", json.dumps(no_uuid), json.dumps(bad_content), json.dumps(thinking),
         *lines[6:], '{"type": "user", "truncated'] ) + "\n")
    err = StringIO()
    out = StringIO()
    call_command("import_claude_transcripts", str(broken), "--no-progress", stdout=out, stderr=err)
    assert "5 malformed line(s) skipped" in out.getvalue() and "5 malformed" in err.getvalue()
    contents = list(Message.objects.order_by("turn_number").values_list("content", flat=True))
    assert "after thinking" in contents and "hmm" not in contents
    assert len(contents) == 9  # the sample's 8 messages and the text of the hand-made line


def test_a_missing_path_is_an_error():
    with pytest.raises(CommandError, match="no such file"):
        run(ROOT / "tests" / "data" / "missing.jsonl")


def test_line_parser_rules():
    assert capture.transcript_line_messages({"type": "summary", "summary": "x"}) == []
    with pytest.raises(capture.InvalidInput) as caught:
        capture.transcript_line_messages({"type": "user", "uuid": "u", "message": {"content": "x"}})
    assert caught.value.field == "line.sessionId"
