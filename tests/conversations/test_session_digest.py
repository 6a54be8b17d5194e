"""A digest of every session (issue #44.4), offline: written when a session ends or compacts from the
recorded real traffic of Claude Code (tests/data/traffic) through the capture endpoint; what was
asked, files touched (project-relative), commands and their outcome, decisions (never "Decision:
Decided: …"), dated, in its project; a searchable kind that winni_recall and automatic recall rank;
shown above its transcript in the admin. A session with no text gets none, and the log says why."""
import logging
from pathlib import Path
from typing import Any

import pytest

from agents import autorecall, capture
from conversations.models import Conversation, SessionDigest
from conversations.services import digest as digests
from core.recall import recall
from tests.traffic_corpus import TRAFFIC, hook_calls

CLAUDE = TRAFFIC / "claude-2.1.197"


def replay(api: Any, tmp_path: Path, capture_on_commit: Any) -> list[dict[str, Any]]:
    answers = []
    for call in hook_calls(CLAUDE, tmp_path):
        if call.body is None:
            continue
        with capture_on_commit(execute=True):
            response = api.post("/api/v1/capture/events", call.body, format="json")
        assert response.status_code < 300, response.json()
        answers.append(response.json())
    return answers


@pytest.fixture
def recorded(db: Any, api: Any, tmp_path: Path, django_capture_on_commit_callbacks: Any) -> SessionDigest:
    replay(api, tmp_path, django_capture_on_commit_callbacks)
    # The session that stated the decision (the recording holds a second one).
    conversation = Conversation.objects.get(metadata__source="claude-code", messages__role="user",
                                            messages__content__contains="integer cents")
    return SessionDigest.objects.get(conversation=conversation)


def test_session_end_writes_a_dated_digest_in_its_project(recorded):
    sections, text = recorded.sections, recorded.text
    assert recorded.project is not None and recorded.project.slug == "shop"
    assert recorded.trigger in ("SessionEnd", "PreCompact") and recorded.writer == "extractive"
    assert text.startswith(f"Session digest · shop · {recorded.started_at.date().isoformat()}")
    assert any("integer cents" in asked for asked in sections["asked"])
    # Files as the project names them, never the recording machine's absolute paths.
    assert "src/invoice.py" in sections["files_changed"]
    assert not any(path.startswith("/home/dev/shop") for path in sections["files_changed"] + sections["files_read"]), text
    assert sections["commands"] and all(command.startswith("Bash ") for command in sections["commands"])
    assert "{" not in " ".join(sections["commands"])[:1], "a command is one readable line, not JSON"
    decision = next(d for d in sections["decisions"] if "integer cents" in d)
    assert not decision.lower().startswith(("decided", "decision")), decision
    assert "Decision: Decided" not in text and "Decisions: Decided" not in text
    assert sections["last_answer"]

    # A later checkpoint of the session rewrites its one digest.
    again = digests.session_digest_write(conversation_id=recorded.conversation_id, trigger="PreCompact")
    assert again is not None and again.pk == recorded.pk and again.trigger == "PreCompact"
    assert SessionDigest.objects.filter(conversation_id=recorded.conversation_id).count() == 1


def test_the_digest_is_ranked_by_recall_and_shown_in_the_admin(recorded, admin_client):
    from conversations.admin import transcript_url

    found = recall(query="integer cents invoice", kinds=["digest"], filters={"project": "shop"})["results"]
    assert found[0]["id"] == str(recorded.pk)
    assert found[0]["conversation_id"] == str(recorded.conversation_id)
    everywhere = recall(query="integer cents invoice rounding", filters={"project": "shop"}, limit=20)["results"]
    assert str(recorded.pk) in {hit["id"] for hit in everywhere}
    project = autorecall._project_of("shop")
    candidates = autorecall._recalled("How do we store money amounts in the invoice code?", project,
                                      "a-new-session", None, mode="fts")
    assert ("digest", str(recorded.pk)) in {(c.kind, c.id) for c in candidates}
    # Not within its own session: the session has its own turns in context.
    own = autorecall._recalled("integer cents invoice", project, recorded.session_id, None, mode="fts")
    assert str(recorded.pk) not in {c.id for c in own if c.kind == "digest"}

    # The admin shows it above its transcript, and lists it.
    page = admin_client.get(transcript_url(recorded.conversation_id)).content.decode()
    assert "Session digest" in page and page.index("Session digest") < page.index('id="turn-1"')
    listing = admin_client.get("/admin/conversations/sessiondigest/")
    assert listing.status_code == 200 and recorded.session_id in listing.content.decode()


def test_a_session_with_no_text_gets_no_digest_and_the_log_says_why(db, caplog, django_capture_on_commit_callbacks):
    payload = {"session_id": "tools-only", "cwd": "/home/dev/shop", "hook_event_name": "PostToolUse",
               "tool_name": "Read", "tool_input": {"file_path": "/home/dev/shop/src/invoice.py"},
               "tool_response": {"type": "text", "file": {"content": "x = 1"}}}
    with django_capture_on_commit_callbacks(execute=True):
        assert capture.capture_hook_event(payload=payload, project="shop").stored
    with caplog.at_level(logging.INFO, logger="winni.storage"), django_capture_on_commit_callbacks(execute=True):
        capture.capture_hook_event(payload={"session_id": "tools-only", "cwd": "/home/dev/shop",
                                            "hook_event_name": "SessionEnd"}, project="shop")
    assert not SessionDigest.objects.exists()
    logged = [getattr(r, "fields", {}) for r in caplog.records if getattr(r, "fields", {}).get("op") == "conversation.digest"]
    assert logged and logged[-1]["written"] is False and logged[-1]["reason"] == digests.NO_TEXT


def test_a_labelled_rule_is_a_rule_shown_without_its_label(db, django_capture_on_commit_callbacks):
    """Found by using Winni: "Rule: round half-even in src/invoice.py" said in a prompt was not among
    the digest's rules (none of "must", "always", "never" in it)."""
    base = {"session_id": "rules", "cwd": "/home/dev/shop"}
    events = [{"hook_event_name": "UserPromptSubmit",
               "prompt": "The totals drift by a cent. Rule: round half-even in src/invoice.py. Why the drift?"},
              {"hook_event_name": "Stop", "last_assistant_message": "Float sums drift; I switched to Decimal."},
              {"hook_event_name": "SessionEnd"}]
    with django_capture_on_commit_callbacks(execute=True):
        for event in events:
            capture.capture_hook_event(payload={**base, **event}, project="shop")
    digest = SessionDigest.objects.get(session_id="rules")
    assert digest.sections["rules"] == ["Round half-even in src/invoice.py."]
    assert "Rules: Round half-even in src/invoice.py." in digest.text and "Rule: Rule" not in digest.text


def test_a_last_answer_that_asks_is_listed_once(db, django_capture_on_commit_callbacks):
    """Found by using Winni: a session ending on the agent's question listed that reply twice, as an
    open question and as the last answer."""
    base = {"session_id": "asks", "cwd": "/home/dev/shop"}
    reply = "Should the invoice totals be rounded half-even on the total or on every line?"
    with django_capture_on_commit_callbacks(execute=True):
        for event in ({"hook_event_name": "UserPromptSubmit", "prompt": "Fix the rounding of invoice totals."},
                      {"hook_event_name": "Stop", "last_assistant_message": reply},
                      {"hook_event_name": "SessionEnd"}):
            capture.capture_hook_event(payload={**base, **event}, project="shop")
    digest = SessionDigest.objects.get(session_id="asks")
    assert digest.sections["open_questions"] == [reply] and digest.sections["last_answer"] == reply
    assert digest.text.count(reply) == 1 and "Last answer" not in digest.text
