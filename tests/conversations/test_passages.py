"""Long chat turns searched by passage (conversations.services.passages, memory.vectors): bounded
vectors per message, a message ranked by its best passage and shown by it, and the backfill that
gives messages stored before passages theirs."""
import pytest
from django.core.management import call_command

from conversations import services as conversations
from conversations.models import Message
from conversations.services.passages import PASSAGE_CHARS, PASSAGES_MAX, message_passages, passages_of
from core import recall
from memory import vectors
from memory.models import Embedding

pytestmark = pytest.mark.django_db

FILLER = ("We walked through the onboarding flow and the colour of the buttons on the settings page. "
          "The design team wants rounded corners everywhere, and the marketing copy needs another pass. ")
# The fact sits past EMBED_TEXT_CHARS (2,000): the message's own vector never reads it.
LONG_REPLY = FILLER * 12 + "The report-merge job retries 5 times with exponential backoff starting at 200 ms. " + FILLER * 4
QUESTION = "How many times does the report-merge job retry?"


def test_a_long_turn_is_cut_into_bounded_sentence_aligned_passages():
    pieces = passages_of(LONG_REPLY)
    assert 2 < len(pieces) <= PASSAGES_MAX
    assert all(len(piece) <= PASSAGE_CHARS and piece.endswith(".") for piece in pieces)
    assert any("retries 5 times" in piece for piece in pieces)
    # A sentence longer than a passage is cut at spaces; 1 MB of text gives PASSAGES_MAX of them at most.
    huge = passages_of("word " * 200_000)
    assert len(huge) == PASSAGES_MAX and all(0 < len(piece) <= PASSAGE_CHARS for piece in huge)


@pytest.mark.parametrize("role, content, expected", [
    ("user", "short question about the deploy", 0),
    ("assistant", "x. " * (PASSAGE_CHARS // 3), 0),  # just under the length: one vector, as before
    ("tool", '{"tool_name": "Bash", "tool_response": "' + "log line. " * 500 + '"}', 0),
    ("assistant", LONG_REPLY, len(passages_of(LONG_REPLY))),
])
def test_only_long_chat_turns_have_passages(role, content, expected):
    assert len(message_passages(Message(role=role, content=content))) == expected


def test_passages_can_be_turned_off(settings):
    settings.WINNI_EMBEDDING_PASSAGES_MAX = 0
    assert message_passages(Message(role="assistant", content=LONG_REPLY)) == []
    settings.WINNI_EMBEDDING_PASSAGES_MAX = 2
    assert len(message_passages(Message(role="assistant", content=LONG_REPLY))) == 2


def _store(conversation, role, content):
    return conversations.message_store(conversation_id=conversation.id, role=role, content=content)


def test_a_1_mb_message_gets_a_bounded_number_of_vectors(settings, django_capture_on_commit_callbacks):
    assert settings.WINNI_EMBEDDING_PASSAGES_MAX == 8
    with django_capture_on_commit_callbacks(execute=True):
        chat = conversations.conversation_begin(session_id="big")
        short = _store(chat, "user", "please paste the whole log")
        huge = _store(chat, "assistant", ("The worker restarted after the deploy finished. " * 30_000)[:1_000_000])
    assert Embedding.objects.filter(object_id=str(short.pk)).count() == 1
    stored = Embedding.objects.filter(object_id=str(huge.pk))
    assert sorted(stored.values_list("passage", flat=True)) == list(range(8 + 1))
    # Found once, however many of its vectors are near the query.
    page = conversations.message_search(query="worker restarted after the deploy", mode="semantic", limit=5)
    assert [hit.message.pk for hit in page.hits].count(huge.pk) == 1


@pytest.fixture
def minilm(settings):
    settings.WINNI_EMBEDDING_PROVIDER = "local"
    settings.WINNI_EMBEDDING_MODEL = "all-MiniLM-L6-v2"


@pytest.fixture
def retry_chat(minilm, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        chat = conversations.conversation_begin(session_id="ops")
        _store(chat, "user", "what did the design review say?")
        reply = _store(chat, "assistant", LONG_REPLY)
        _store(chat, "user", "The nightly backup job runs at 3 am and keeps a week of copies.")
        _store(chat, "assistant", "The deploy job pushes the image to the registry and restarts the web pods.")
    return reply


def test_a_long_turn_is_found_by_its_passage_and_shown_by_it(retry_chat, api):
    """Real all-MiniLM-L6-v2: the fact lies beyond what the message's own vector reads, so only its
    passage can find it by meaning; every reader shows that passage."""
    page = conversations.message_search(query=QUESTION, mode="semantic", limit=2)
    assert page.hits[0].message.pk == retry_chat.pk
    assert "retries 5 times" in page.hits[0].snippet and len(page.hits[0].snippet) <= PASSAGE_CHARS
    found = recall.recall(query=QUESTION, mode="hybrid", kinds=["message"], limit=2)["results"][0]
    assert found["id"] == str(retry_chat.pk) and "retries 5 times" in found["snippet"]
    rest = api.post("/api/v1/recall", {"query": QUESTION, "mode": "semantic", "kinds": ["message"]}, format="json")
    assert rest.status_code == 200 and "retries 5 times" in rest.json()["results"][0]["snippet"]
    dewey = api.get("/api/v1/messages/search/", {"query": QUESTION, "mode": "hybrid", "session_id": "ops"})
    assert dewey.status_code == 200 and "retries 5 times" in dewey.json()["results"][0]["snippet"]


def test_messages_stored_before_passages_get_them_from_the_backfill(retry_chat):
    # A store from before migration memory 0014: every message has its own vector and no passages.
    own = Embedding.objects.get(object_id=str(retry_chat.pk), passage=0)
    Embedding.objects.filter(passage__gt=0).delete()
    assert conversations.message_search(query=QUESTION, mode="semantic", limit=1).hits[0].message.pk != retry_chat.pk
    call_command("winni_reembed", "--passages")
    stored = Embedding.objects.filter(object_id=str(retry_chat.pk))
    assert stored.count() == 1 + len(passages_of(LONG_REPLY)) and stored.get(passage=0).pk == own.pk
    assert Embedding.objects.filter(passage__gt=0).exclude(object_id=str(retry_chat.pk)).count() == 0
    assert conversations.message_search(query=QUESTION, mode="semantic", limit=1).hits[0].message.pk == retry_chat.pk
    # Run again: nothing to add.
    call_command("winni_reembed", "--passages")
    assert Embedding.objects.filter(object_id=str(retry_chat.pk)).count() == stored.count()
    assert vectors.passages_store(kind="memory", ids=[1]) == 0  # a kind without passages


def test_automatic_recall_reads_a_long_turns_best_vector(django_capture_on_commit_callbacks):
    """A candidate that full-text search alone found gets its similarity from its stored vectors:
    the best of its own and its passages' (less PASSAGE_DISCOUNT), as the vector side ranks it."""
    import numpy as np

    from agents import autorecall
    from memory import embeddings

    with django_capture_on_commit_callbacks(execute=True):
        chat = conversations.conversation_begin(session_id="gate")
        reply = _store(chat, "assistant", LONG_REPLY)
    query = embeddings.embed_query("report-merge job retries backoff")
    vectors.model_active()  # this test's model (the process remembers the last test's)
    candidate = autorecall.Candidate(kind="message", id=str(reply.pk), text=reply.content, source={})
    autorecall._stored_similarities(query, [candidate])
    stored = Embedding.objects.filter(object_id=str(reply.pk))
    assert stored.count() > 1
    expected = max(float(np.dot(query, row.vector)) - (vectors.PASSAGE_DISCOUNT if row.passage else 0.0)
                   for row in stored)
    assert candidate.similarity == pytest.approx(expected, abs=1e-5)
    own = float(np.dot(query, stored.get(passage=0).vector))
    assert candidate.similarity > own  # the passage that holds the words is nearer than the whole turn
