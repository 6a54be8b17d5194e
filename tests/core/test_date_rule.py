"""Issue #22, item 5: one date rule for every tool and endpoint that filters by date. A date-only
end_date covers its whole day, a start after the end is an empty range (issue #24: the OpenAPI
schema cannot say "after", so what it allows must be accepted), over the services, REST and MCP
alike; a malformed date is refused naming its field."""
import pytest

from conversations import services as conversations
from conversations.models import FiedlerResult, Message
from core import recall
from core.errors import InvalidInput
from memory import services as memories
from memory.models import Memory

LATE = "2024-03-02T23:59:59Z"
NEXT_DAY = "2024-03-03T00:00:01Z"
IN_RANGE = {"start_date": "2024-03-02", "end_date": "2024-03-02"}
BACKWARDS = {"start_date": "2024-03-03", "end_date": "2024-03-02"}


def _corpus():
    """A message, a Fiedler result and a memory late on 2 March, and the same on 3 March."""
    conversation = conversations.conversation_begin(session_id="dates")
    for at, word in ((LATE, "late"), (NEXT_DAY, "next")):
        conversations.message_store(conversation_id=conversation.id, role="user", content=f"kiwi {word} note",
                                    created_at=at)
        conversations.fiedler_result_store(correlation_id=f"c-{word}", model="m", output=f"kiwi {word} answer")
        FiedlerResult.objects.filter(correlation_id=f"c-{word}").update(created_at=at)
        memory = memories.memory_store(content=f"kiwi {word} memory")[0]
        Memory.objects.filter(pk=memory.pk).update(created_at=at)


@pytest.mark.django_db
def test_every_service_reads_a_date_alone_as_the_whole_day():
    _corpus()
    page = conversations.message_search(query="kiwi", **IN_RANGE)
    assert [hit.message.content for hit in page.hits] == ["kiwi late note"]
    results, total, _ = conversations.fiedler_results_query(**IN_RANGE)
    assert [r.output for r in results] == ["kiwi late answer"] and total == 1
    hits = recall.recall(query="kiwi", mode="fts", filters=IN_RANGE)["results"]
    assert sorted(hit["text"] for hit in hits) == ["kiwi late memory", "kiwi late note"]
    assert [hit.memory.content for hit in memories.memory_search(query="kiwi late memory", **IN_RANGE)] == [
        "kiwi late memory"]


@pytest.mark.django_db
@pytest.mark.parametrize("call", [
    lambda: conversations.message_search(query="kiwi", **BACKWARDS).hits,
    lambda: conversations.fiedler_results_query(**BACKWARDS)[0],
    lambda: recall.recall(query="kiwi", filters=BACKWARDS)["results"],
    lambda: memories.memory_search(query="kiwi", **BACKWARDS),
])
def test_every_service_finds_nothing_in_a_backwards_range(call):
    _corpus()
    assert list(call()) == []


@pytest.mark.django_db
def test_a_malformed_date_is_refused_naming_its_field():
    with pytest.raises(InvalidInput) as error:
        conversations.message_search(query="kiwi", start_date="2024-02-30")
    assert error.value.field == "start_date"


@pytest.mark.django_db
def test_rest_endpoints_share_the_rule(api):
    _corpus()
    searched = api.get("/api/v1/messages/search/", {"query": "kiwi", **IN_RANGE})
    assert searched.status_code == 200 and [h["content"] for h in searched.json()["results"]] == ["kiwi late note"]
    fiedler = api.get("/api/v1/fiedler-results/", IN_RANGE)
    assert fiedler.status_code == 200 and [r["output"] for r in fiedler.json()["results"]] == ["kiwi late answer"]
    recalled = api.post("/api/v1/recall", {"query": "kiwi", "mode": "fts", **IN_RANGE}, format="json")
    assert recalled.status_code == 200
    assert sorted(h["text"] for h in recalled.json()["results"]) == ["kiwi late memory", "kiwi late note"]
    found = api.post("/api/v1/memories/search", {"query": "kiwi late memory", **IN_RANGE}, format="json")
    assert found.status_code == 200 and [r["content"] for r in found.json()["results"]] == ["kiwi late memory"]
    for response, key in (
        (api.get("/api/v1/messages/search/", {"query": "kiwi", **BACKWARDS}), "results"),
        (api.get("/api/v1/fiedler-results/", BACKWARDS), "results"),
        (api.get("/api/v1/recall", {"query": "kiwi", **BACKWARDS}), "results"),
        (api.post("/api/v1/memories/search", {"query": "kiwi", **BACKWARDS}, format="json"), "results"),
    ):
        assert response.status_code == 200 and response.json()[key] == [], response.content
    bad = api.post("/api/v1/recall", {"query": "kiwi", "end_date": "whenever"}, format="json")
    assert bad.status_code == 400 and "end_date" in bad.json()["error"]["fields"]


@pytest.mark.live
def test_mcp_tools_share_the_rule(mcp_legacy):
    _corpus()
    assert Message.objects.count() == 2
    searched = mcp_legacy.call("dewey_search", {"query": "kiwi", **IN_RANGE})
    assert [hit["content"] for hit in searched["results"]] == ["kiwi late note"]
    fiedler = mcp_legacy.call("dewey_query_fiedler_results", IN_RANGE)
    assert [r["output"] for r in fiedler["results"]] == ["kiwi late answer"]
    recalled = mcp_legacy.call("winni_recall", {"query": "kiwi", "mode": "fts", "detail": "full", **IN_RANGE})
    assert sorted(hit["text"] for hit in recalled["results"]) == ["kiwi late memory", "kiwi late note"]
    found = mcp_legacy.call("search_memory", {"query": "kiwi late memory", **IN_RANGE})
    assert [r["content"] for r in found["results"]] == ["kiwi late memory"]
    for tool, arguments in (("dewey_search", {"query": "kiwi"}), ("dewey_query_fiedler_results", {}),
                            ("winni_recall", {"query": "kiwi"}), ("search_memory", {"query": "kiwi"})):
        assert mcp_legacy.call(tool, {**arguments, **BACKWARDS})["results"] == []
    assert "end_date" in mcp_legacy.call_error("winni_recall", {"query": "kiwi", "end_date": "whenever"})
