"""Session digests written by the configured LLM (issue #44.5), against small real HTTP servers
speaking the OpenAI and Anthropic protocols (tests.llm_servers): the model writes the digest from
the offline sections and the transcript; a timeout, an HTTP error or a garbage reply leaves the
offline digest with the error on it and on the dashboard; a spent daily budget makes no call at
all (medallion calls included); a full backlog keeps later sessions offline. Every call is a row
with its tokens and estimated cost."""
import json
from decimal import Decimal
from typing import Any

import pytest
from django.utils.html import escape

from agents import capture
from conversations.models import Conversation, SessionDigest
from conversations.services import digest as digests
from core import llm
from core.models import LLMCall
from medallions import llm as medallion_llm
from tests.llm_servers import HANG, FakeLLMServer

pytestmark = pytest.mark.django_db

CWD = "/home/dev/shop"
MEDALLION = json.dumps({"summary": {"high_level": "Invoice money is integer cents."},
                        "decisions": [{"id": "D-001", "statement": "Money is integer cents", "confidence": 0.9}]})
MODEL_DIGEST = {
    "asked": ["Store invoice money amounts without float rounding errors"],
    "decisions": ["Every money amount is stored as integer cents"],
    "rules": [],
    "open_questions": ["Should refunds round down?"],
    "last_answer": "Invoice totals are integer cents now; refund rounding is still open.",
}


@pytest.fixture
def serve(settings):
    servers = []

    def start(protocol: str, replies: list[Any], usage: tuple[int, int] | None = None) -> FakeLLMServer:
        servers.append(FakeLLMServer(protocol, replies, usage=usage))
        settings.WINNI_MEDALLION_LLM_PROVIDER = protocol
        settings.WINNI_MEDALLION_LLM_BASE_URL = servers[-1].url
        settings.WINNI_MEDALLION_LLM_MODEL = "digest-model"
        settings.WINNI_MEDALLION_LLM_TIMEOUT_SECONDS = 0.5
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def session(session_id: str, capture_on_commit: Any, *, end: bool = False) -> Conversation:
    """A Claude Code session through the capture endpoint's service: a prompt, an edit, a reply
    stating a decision and asking a question, then (with `end`) SessionEnd, which queues the digest
    and a medallion checkpoint (both call the model)."""
    events = [
        {"hook_event_name": "UserPromptSubmit", "prompt": "Invoice totals are off by a cent: how should we store money?"},
        {"hook_event_name": "PostToolUse", "tool_name": "Edit",
         "tool_input": {"file_path": f"{CWD}/src/invoice.py", "old_string": "total = float(x)",
                        "new_string": "total_cents = int(x)"},
         "tool_response": {"filePath": f"{CWD}/src/invoice.py", "oldString": "total = float(x)"}},
        {"hook_event_name": "Stop", "last_assistant_message": "Decision: store every money amount as integer "
                                                              "cents. Should refunds round down?"},
    ] + ([{"hook_event_name": "SessionEnd"}] if end else [])
    for event in events:
        with capture_on_commit(execute=True):
            capture.capture_hook_event(payload={"session_id": session_id, "cwd": CWD, **event}, project="shop")
    return Conversation.objects.get(session_id=session_id)


def digest_of(conversation: Conversation) -> SessionDigest:
    return SessionDigest.objects.get(conversation=conversation)


def ended(session_id: str, capture_on_commit: Any) -> SessionDigest:
    """The session's digest as SessionEnd writes it (the model's turn included), without the
    medallion checkpoint SessionEnd also queues."""
    conversation = session(session_id, capture_on_commit)
    with capture_on_commit(execute=True):
        digests.session_digest_write(conversation_id=conversation.pk, trigger="SessionEnd")
    return digest_of(conversation)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_the_model_writes_the_digest_and_the_call_is_accounted(serve, settings, protocol,
                                                                django_capture_on_commit_callbacks):
    settings.WINNI_LLM_INPUT_USD_PER_MTOK, settings.WINNI_LLM_OUTPUT_USD_PER_MTOK = 3.0, 15.0
    # SessionEnd checkpoints a medallion first, then the digest waiting for the model is written.
    server = serve(protocol, [MEDALLION, "```json\n" + json.dumps(MODEL_DIGEST) + "\n```"], usage=(1234, 56))
    digest = digest_of(session("llm-1", django_capture_on_commit_callbacks, end=True))

    assert digest.writer == f"{protocol}:digest-model" and digest.writer_note == "" and not digest.awaiting_model
    assert digest.sections["decisions"] == MODEL_DIGEST["decisions"]
    assert digest.sections["open_questions"] == ["Should refunds round down?"]
    # Files and commands stay the offline writer's, read from the tool calls.
    assert digest.sections["files_changed"] == ["src/invoice.py"]
    assert "Decisions: Every money amount is stored as integer cents" in digest.text
    # The model read the same evidence: the offline extraction and the transcript text.
    medallion_request, request = server.requests
    body = request["body"]
    prompt = body["messages"][-1]["content"]
    assert "Offline extraction" in prompt and '"files_changed"' in prompt
    assert "[user] Invoice totals are off by a cent" in prompt and "[tool] Edit src/invoice.py" in prompt
    system = body["system"] if protocol == "anthropic" else body["messages"][0]["content"]
    assert '"open_questions"' in system
    assert body["max_tokens"] == digests.MODEL_OUTPUT_TOKENS

    medallion_call, call = LLMCall.objects.order_by("started_at")
    assert medallion_call.purpose == "medallion" and medallion_call.outcome == "ok"
    assert (call.purpose, call.provider, call.model, call.outcome) == ("digest", protocol, "digest-model", "ok")
    assert (call.input_tokens, call.output_tokens, call.tokens_estimated) == (1234, 56, False)
    assert call.cost_usd == Decimal("0.004542")  # 1234 × $3/M + 56 × $15/M
    usage = llm.usage_today()
    assert (usage["calls"], usage["tokens"], usage["cost_usd"]) == (2, 2 * 1290, Decimal("0.009084"))


@pytest.mark.parametrize("reply, note, outcome", [
    (HANG, "the model failed: openai at http://127.0.0.1:{port} timed out after 0.5 s", "error"),
    ((503, {"error": {"message": "overloaded"}}), "the model failed: openai answered HTTP 503", "error"),
    ((200, b"<html>gateway</html>"), "the model failed: openai sent a response that is not its protocol's shape", "error"),
    ("Sure! Here is the digest you asked for.", "the model's digest was not valid: the reply holds no JSON object", "ok"),
    (json.dumps({**MODEL_DIGEST, "decisions": "integer cents"}), "the model's digest was not valid: decisions:", "ok"),
], ids=["timeout", "http-error", "not-the-protocol", "prose", "wrong-shape"])
def test_a_failing_model_leaves_the_offline_digest_and_says_why(serve, reply, note, outcome, admin_client,
                                                                 django_capture_on_commit_callbacks):
    from conversations.admin import transcript_url

    server = serve("openai", [reply])
    digest = ended("llm-fails", django_capture_on_commit_callbacks)

    assert len(server.requests) == 1
    assert digest.writer == "extractive" and not digest.awaiting_model
    assert digest.writer_note.startswith(note.format(port=server.url.rsplit(":", 1)[1])), digest.writer_note
    # The offline digest is whole: the decision as the offline writer reads it.
    assert any("integer cents" in d for d in digest.sections["decisions"]) and digest.text.startswith("Session digest")
    # Visible where the digest is read: above the transcript in the admin.
    page = admin_client.get(transcript_url(digest.conversation_id)).content.decode()
    assert escape("Offline digest kept: " + note.split("{")[0][:40]) in page
    (call,) = LLMCall.objects.all()
    assert call.purpose == "digest" and call.outcome == outcome
    if outcome == "error":
        assert call.error and note.split(": ", 1)[1].split("{")[0][:20] in call.error


def test_a_spent_budget_makes_no_call_and_the_dashboard_says_why(serve, settings, admin_client,
                                                                  django_capture_on_commit_callbacks):
    settings.WINNI_LLM_DAILY_TOKEN_BUDGET = 5_000
    # Earlier today a medallion checkpoint used most of the day's tokens.
    LLMCall.objects.create(purpose="medallion", provider="openai", model="digest-model", input_tokens=3_500,
                           output_tokens=500, outcome="ok", cost_usd=Decimal("0.018"))
    server = serve("openai", [json.dumps(MODEL_DIGEST)])
    digest = ended("llm-broke", django_capture_on_commit_callbacks)

    assert server.requests == [], "no request once the budget cannot pay for the call"
    assert digest.writer == "extractive"
    assert digest.writer_note.startswith("the daily LLM token budget is spent: 4,000 of 5,000 tokens used today")
    assert LLMCall.objects.count() == 1
    # The medallion writer is bounded by the same rule.
    writer = medallion_llm.provider_from_settings()
    with pytest.raises(llm.LLMBudgetSpent):
        writer.generate({"graph_nodes": ["repo:shop"], "tags": []}, medallion_llm.Evidence("money in cents"))
    assert server.requests == []

    page = admin_client.get("/admin/").content.decode()
    assert 'id="winni-llm"' in page
    assert "4,000 of 5,000" in page and "$0.0180" in page
    assert "the daily LLM token budget is spent" in page and "llm-broke" in page


def test_a_full_backlog_keeps_later_sessions_offline(serve, settings, django_capture_on_commit_callbacks):
    settings.WINNI_DIGEST_LLM_BACKLOG = 1
    server = serve("openai", [json.dumps(MODEL_DIGEST), json.dumps(MODEL_DIGEST)])
    first = session("llm-a", django_capture_on_commit_callbacks)
    second = session("llm-b", django_capture_on_commit_callbacks)

    # The first waits for the model (its task not run yet), the second finds the backlog full.
    waiting = digests.session_digest_write(conversation_id=first.pk, trigger="SessionEnd")
    offline = digests.session_digest_write(conversation_id=second.pk, trigger="SessionEnd")
    assert waiting.awaiting_model and waiting.writer_note == ""
    assert not offline.awaiting_model and offline.writer == "extractive"
    assert offline.writer_note == digests.BACKLOG_FULL.format(waiting=1, cap=1)
    assert digests.model_backlog() == 1

    written = digests.session_digest_model_write(digest_id=waiting.pk)
    assert written.writer == "openai:digest-model" and len(server.requests) == 1
    assert digests.model_backlog() == 0
    # Only a digest that waits is written: the model is not called twice for it.
    assert digests.session_digest_model_write(digest_id=waiting.pk) is None and len(server.requests) == 1


def test_digests_stay_offline_with_no_backlog(serve, settings, django_capture_on_commit_callbacks):
    settings.WINNI_DIGEST_LLM_BACKLOG = 0
    server = serve("anthropic", [json.dumps(MODEL_DIGEST)])
    digest = ended("llm-off", django_capture_on_commit_callbacks)
    assert digest.writer == "extractive" and digest.writer_note == "" and server.requests == []
