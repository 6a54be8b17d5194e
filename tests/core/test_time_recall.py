"""Issue #22, time-aware recall: the query's time words read relative to as_of become a boost (not
a filter), an order question lists its best hits oldest first (timeline), recency is a half-life; what was
done is stated in `time_filter`; bad as_of / recency are errors naming the field."""
import datetime as dt

import pytest

from conversations import services as conversations
from core import recall, timerank
from core.errors import InvalidInput

UTC = dt.timezone.utc
AS_OF = "2024-03-24T12:00:00Z"


def test_plan_reads_time_words_relative_to_as_of_and_validates():
    plan = timerank.plan("what did we decide about the cache last week", as_of=AS_OF)
    report = plan.report()
    assert (report["start"], report["end"], report["from_text"], report["used"]) == (
        "2024-03-11T00:00:00+00:00", "2024-03-18T00:00:00+00:00", "last week", ["boost"])
    assert plan.weight(dt.datetime(2024, 3, 12, tzinfo=UTC)) == 1 + timerank.RANGE_BOOST
    # Near the range: part of the boost, halving every half-range (3.5 days) of distance.
    assert plan.weight(dt.datetime(2024, 3, 21, 12, tzinfo=UTC)) == pytest.approx(1 + timerank.RANGE_BOOST / 2)
    assert plan.weight(dt.datetime(2024, 1, 1, tzinfo=UTC)) == pytest.approx(1.0, abs=1e-3)
    assert timerank.plan("the cache", as_of=AS_OF).report() is None
    unread = timerank.plan("what did we ship in Q3", as_of=AS_OF).report()
    assert unread["used"] == ["ignored"] and "Q3" in unread["message"]
    recency = timerank.plan("the cache", as_of=AS_OF, recency=10)
    assert recency.weight(dt.datetime(2024, 3, 14, 12, tzinfo=UTC)) == pytest.approx(0.5)
    assert recency.report()["used"] == ["recency"]
    for kwargs, field in (({"as_of": "someday"}, "as_of"), ({"as_of": "2024-02-30"}, "as_of"),
                          ({"recency": 0}, "recency"), ({"recency": -3}, "recency"), ({"recency": True}, "recency"),
                          ({"recency": "7"}, "recency")):
        with pytest.raises(InvalidInput) as error:
            timerank.plan("x", **kwargs)
        assert error.value.field == field and field in error.value.message


@pytest.fixture
def dated(django_capture_on_commit_callbacks):
    """Three conversations on different days, each mentioning the cache."""
    with django_capture_on_commit_callbacks(execute=True):
        for day, text in ((1, "we sold the old bike and talked about the redis cache"),
                          (12, "we bought the new car and discussed the cache eviction policy"),
                          (23, "cache warming was added to the deploy")):
            conversation = conversations.conversation_begin(session_id="time")
            conversations.message_store(conversation_id=conversation.id, role="user", content=text,
                                        created_at=f"2024-03-{day:02d}T10:00:00Z")


def _texts(out):
    return [hit["text"] for hit in out["results"]]


@pytest.mark.django_db
def test_recall_boosts_the_named_range_and_says_so(dated):
    plain = recall.recall(query="what about the cache", kinds=["message"], mode="fts", as_of=AS_OF)
    assert plain["time_filter"] is None
    out = recall.recall(query="what about the cache last week", kinds=["message"], mode="fts", as_of=AS_OF)
    assert _texts(out)[0] == "we bought the new car and discussed the cache eviction policy"
    assert len(out["results"]) == 3  # a boost, not a filter
    assert out["time_filter"]["from_text"] == "last week" and out["time_filter"]["used"] == ["boost"]
    newest = recall.recall(query="cache", kinds=["message"], mode="fts", as_of=AS_OF, recency=1)
    assert _texts(newest)[0] == "cache warming was added to the deploy"
    with pytest.raises(InvalidInput) as error:
        recall.recall(query="cache", recency=0)
    assert error.value.field == "recency"


@pytest.mark.django_db
def test_an_order_question_lists_its_best_hits_oldest_first(dated):
    out = recall.recall(query="Which did I do first, buy the new car or sell the old bike?", kinds=["message"],
                        mode="fts", as_of=AS_OF)
    assert out["time_filter"]["used"] == ["order"]
    by_id = {hit["id"]: hit for hit in out["results"]}
    timeline = out["time_filter"]["timeline"]
    assert {item["id"] for item in timeline} == set(by_id)  # the hits themselves keep their rank order
    assert [by_id[item["id"]]["text"] for item in timeline][:2] == [
        "we sold the old bike and talked about the redis cache",
        "we bought the new car and discussed the cache eviction policy"]
    assert [item["created_at"] for item in timeline] == sorted(item["created_at"] for item in timeline)
    assert recall.recall(query="the cache", kinds=["message"], mode="fts")["time_filter"] is None


@pytest.mark.django_db
def test_rest_recall_takes_as_of_and_recency(api, dated):
    out = api.post("/api/v1/recall", {"query": "the cache last week", "mode": "fts", "as_of": "2024-03-24"},
                   format="json")
    assert out.status_code == 200 and out.json()["time_filter"]["start"] == "2024-03-11T00:00:00+00:00"
    for body, field in (({"query": "x", "as_of": "soon"}, "as_of"), ({"query": "x", "recency": 0}, "recency"),
                        ({"query": "x", "recency": "abc"}, "recency")):
        bad = api.post("/api/v1/recall", body, format="json")
        assert bad.status_code == 400 and field in bad.json()["error"]["fields"], bad.content


@pytest.mark.live
def test_mcp_winni_recall_with_time(mcp_legacy, dated):
    out = mcp_legacy.call("winni_recall", {"query": "the cache last week", "mode": "fts", "as_of": AS_OF, "detail": "full"})
    assert out["time_filter"]["from_text"] == "last week"
    assert out["results"][0]["text"] == "we bought the new car and discussed the cache eviction policy"
    unread = mcp_legacy.call("winni_recall", {"query": "the cache in Q3", "mode": "fts"})
    assert unread["time_filter"]["used"] == ["ignored"]
    assert "as_of" in mcp_legacy.call_error("winni_recall", {"query": "x", "as_of": "the day after"})
    assert "recency" in mcp_legacy.call_error("winni_recall", {"query": "x", "recency": -1})


@pytest.mark.django_db
def test_dewey_search_and_search_memory_use_the_same_time_rules(api, dated, django_capture_on_commit_callbacks):
    from memory import services as memories
    from memory.models import Memory

    page = conversations.message_search(query="cache", mode="fts", as_of=AS_OF, recency=1)
    assert page.hits[0].message.content == "cache warming was added to the deploy"
    assert page.time_filter["used"] == ["recency"]
    ordered = conversations.message_search(query="which did we do first, the cache or the car", mode="fts",
                                           as_of=AS_OF)
    timeline = ordered.time_filter["timeline"]
    assert ordered.time_filter["used"] == ["order"] and len(timeline) == len(ordered.hits)
    assert [item["created_at"] for item in timeline] == sorted(item["created_at"] for item in timeline)
    searched = api.get("/api/v1/messages/search/", {"query": "cache last week", "mode": "fts", "as_of": AS_OF})
    assert searched.status_code == 200
    assert searched.json()["results"][0]["content"] == "we bought the new car and discussed the cache eviction policy"
    assert searched.json()["time_filter"]["from_text"] == "last week"
    bad = api.get("/api/v1/messages/search/", {"query": "cache", "recency": "0"})
    assert bad.status_code == 400 and "recency" in bad.json()["error"]["fields"]

    for day, text in ((2, "the cache server is memcached"), (18, "the cache server is redis")):
        with django_capture_on_commit_callbacks(execute=True):  # embedded now: old rows are not re-embedded by search
            memory = memories.memory_store(content=text)[0]
        Memory.objects.filter(pk=memory.pk).update(created_at=f"2024-03-{day:02d}T10:00:00Z")
    found = api.post("/api/v1/memories/search", {"query": "the cache server", "as_of": AS_OF, "recency": 2},
                     format="json").json()
    assert found["results"][0]["content"] == "the cache server is redis" and found["time_filter"]["used"] == ["recency"]
    early = api.post("/api/v1/memories/search", {"query": "the cache server in early March", "as_of": AS_OF},
                     format="json").json()
    assert early["time_filter"]["used"] == ["boost"]
    bad = api.post("/api/v1/memories/search", {"query": "x", "as_of": "later"}, format="json")
    assert bad.status_code == 400 and "as_of" in bad.json()["error"]["fields"]


@pytest.fixture
def told(django_capture_on_commit_callbacks):
    """The user said how far they read; the assistant's reply repeats the question's words at length."""
    with django_capture_on_commit_callbacks(execute=True):
        conversation = conversations.conversation_begin(session_id="reading")
        for role, text in (
            ("user", "I have read 212 pages of The Nightingale so far."),
            ("assistant", "How many pages are left in The Nightingale depends on the edition: it has about 440 "
                          "pages."),
        ):
            conversations.message_store(conversation_id=conversation.id, role=role, content=text)


@pytest.mark.django_db
def test_a_question_about_the_asker_prefers_what_the_asker_said(told, monkeypatch):
    asked = "How many pages do I have left to read in The Nightingale?"
    out = recall.recall(query=asked, kinds=["message"], mode="fts")
    assert [hit["text"][:9] for hit in out["results"]] == ["I have re", "How many "]
    assert recall.asks_about_self(asked) and not recall.asks_about_self("How many pages did you say were left?")
    # A request's "me" is no question about the asker's doings; a first person beside it still is.
    assert not recall.asks_about_self("Remind me what we settled regarding retries of the merge job")
    assert recall.asks_about_self("Tell me which book I finished a week ago")
    # Addressed to "you", or with the boost off: the reply that repeats the words ranks first.
    addressed = recall.recall(query="How many pages did you say I have left in The Nightingale?", kinds=["message"],
                              mode="fts")
    assert addressed["results"][0]["text"].startswith("How many pages are left")
    monkeypatch.setattr(recall, "SELF_BOOST", 0)
    assert recall.recall(query=asked, kinds=["message"], mode="fts")["results"][0]["text"].startswith("How many")
