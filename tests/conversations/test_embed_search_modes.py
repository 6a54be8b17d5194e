"""dewey_search's semantic and hybrid modes (the memory app's ranking over conversations' filters)."""
import pytest

from conversations import services
from core.errors import InvalidInput

pytestmark = pytest.mark.usefixtures("searched_tables_vacuumed")


@pytest.fixture
def chat(db, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        conversation = services.conversation_begin(session_id="modes")
        for text in ("the office wifi password rotates monthly", "ask the front desk for it",
                     "lunch is at noon", "the printer jams again"):
            services.message_store(conversation_id=conversation.id, role="user", content=text)
        other = services.conversation_begin(session_id="elsewhere")
        services.message_store(conversation_id=other.id, role="user", content="wifi password for guests")
    return conversation


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_meaning_modes_rank_within_the_filters(chat, mode):
    page = services.message_search(query="office wifi password", session_id="modes", mode=mode, limit=3)
    assert [hit.message.conversation_id for hit in page.hits] == [chat.id] * len(page.hits)
    assert page.hits[0].message.turn_number == 1 and page.total_is_estimate
    assert [m.turn_number for m in page.hits[0].context] == [2, 3]


def test_hybrid_lifts_the_answer_after_the_question(chat):
    turns = [hit.message.turn_number for hit in
             services.message_search(query="office wifi password", session_id="modes", mode="hybrid", limit=2).hits]
    assert turns == [1, 2]


def test_unknown_mode_is_refused(chat):
    with pytest.raises(InvalidInput) as error:
        services.message_search(query="wifi", mode="psychic")
    assert error.value.field == "mode"


def test_rest_search_takes_a_mode(api, chat):
    answer = api.get("/api/v1/messages/search/", {"query": "wifi password", "mode": "hybrid", "session_id": "modes"})
    assert answer.status_code == 200 and answer.json()["results"][0]["turn"] == 1
    bad = api.get("/api/v1/messages/search/", {"query": "wifi", "mode": "x"})
    assert bad.status_code == 400 and "mode" in bad.json()["error"]["fields"]


def test_search_default_mode_follows_the_setting(chat, settings):
    """Production default is hybrid (best on the retrieval benchmark); the test settings pin fts."""
    settings.WINNI_SEARCH_DEFAULT_MODE = "hybrid"
    page = services.message_search(query="wifi password", session_id="modes")
    assert page.mode == "hybrid"
    assert "wifi password" in page.hits[0].message.content
    settings.WINNI_SEARCH_DEFAULT_MODE = "fts"
    assert services.message_search(query="wifi password", session_id="modes").mode == "fts"
    assert services.message_search(query="wifi password", session_id="modes", mode="semantic").mode == "semantic"
