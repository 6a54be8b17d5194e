"""The optional judgment model against a small real OpenAI-compatible HTTP server."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conversations import services as conversations
from memory.librarian import services as librarian
from memory.librarian.models import QueryMemory

pytestmark = pytest.mark.django_db
QUERY = "How do I set the DATABASE_URL?"


class FakeChat:
    """POST /v1/chat/completions answering `reply`; keeps the request bodies."""

    def __init__(self) -> None:
        self.reply = "0.95"
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                fake.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                body = json.dumps({"choices": [{"message": {"content": fake.reply}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def judge(settings):
    fake = FakeChat()
    settings.LIBRARIAN_JUDGMENT_MODEL = True
    settings.WINNI_MEDALLION_LLM_PROVIDER = "openai"
    settings.WINNI_MEDALLION_LLM_BASE_URL = fake.url
    settings.WINNI_MEDALLION_LLM_MODEL = "judge-1"
    settings.WINNI_MEDALLION_LLM_TIMEOUT_SECONDS = 5
    cid = conversations.conversation_begin().id
    conversations.message_store(conversation_id=cid, role="assistant", content="Set DATABASE_URL to postgresql://…")
    yield fake
    fake.server.shutdown()


def test_the_rating_becomes_the_confidence_when_the_answer_is_cached(judge):
    for _ in range(3):
        librarian.librarian_ask(query=QUERY)
    assert len(judge.requests) == 1  # only when the decision is about to cache
    request = judge.requests[0]
    assert request["model"] == "judge-1" and "response_format" not in request
    assert request["messages"][0]["content"] == librarian.JUDGE_SYSTEM
    assert QUERY in request["messages"][1]["content"] and "DATABASE_URL to postgresql" in request["messages"][1]["content"]
    entry = QueryMemory.objects.get()
    assert entry.answer is not None and entry.confidence == 0.95
    assert librarian.librarian_ask(query=QUERY).match == "exact"


def test_a_low_rating_keeps_the_answer_out(judge):
    judge.reply = "0.2 — it only half answers"
    for _ in range(4):
        result = librarian.librarian_ask(query=QUERY)
    entry = QueryMemory.objects.get()
    assert result.match == "miss" and entry.answer is None and entry.confidence == 0.2
    assert len(judge.requests) == 2


def test_an_unreachable_or_wordy_judge_leaves_the_answer_unjudged(judge, settings):
    judge.reply = "I cannot say."
    for _ in range(3):
        librarian.librarian_ask(query=QUERY)
    assert QueryMemory.objects.get().confidence == librarian.COMPUTED_CONFIDENCE
    QueryMemory.objects.all().delete()
    settings.WINNI_MEDALLION_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    for _ in range(3):
        librarian.librarian_ask(query=QUERY)
    entry = QueryMemory.objects.get()
    assert entry.answer is not None and entry.confidence == librarian.COMPUTED_CONFIDENCE
