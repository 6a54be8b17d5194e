"""Issue #22 in automatic recall: the prompt's time words ("what did we decide last week"), read
relative to as_of, boost the items dated in that range exactly as winni_recall does (core.timerank);
the result says so in `time_filter`; an unreadable time word is ignored and said so; a bad as_of is
an error naming the field, over the service, MCP (real streamable HTTP) and REST."""
from typing import Any

import pytest

from agents import autorecall
from conversations import services as conversations
from core import projects
from core.errors import InvalidInput
from tests.support import McpClient

AS_OF = "2024-03-24T12:00:00Z"
# The week before AS_OF's week ("last week"): 2024-03-11 to 2024-03-18.
OLDER = "We decided about the invoice rounding: invoice totals are rounded half-even, once per invoice."
LAST_WEEK = "We decided on invoice rounding after the review with Mia: each line is rounded half-up."
ASKED = "what did we decide about the invoice rounding last week"


def seed() -> None:
    """Project "shop": a session in January and one in the week before AS_OF's, both deciding how
    invoices are rounded (the January one says it in more of the prompt's words)."""
    shop = projects.project_create(name="shop", path="/work/shop")
    for session, when, text in (("january", "2024-01-15T10:00:00Z", OLDER),
                                ("march", "2024-03-13T10:00:00Z", LAST_WEEK),
                                # Weaker matches: hybrid recall scales its scores between the best and
                                # the worst candidate, and a boost multiplies them.
                                ("december", "2023-12-01T10:00:00Z", "The invoice PDF is rendered with WeasyPrint."),
                                ("february", "2024-02-02T10:00:00Z", "We decided the CI stays on GitHub Actions."),
                                ("april", "2024-03-15T10:00:00Z", "Invoice numbers are sequential per year.")):
        conversation = conversations.conversation_begin(session_id=session, project=shop)
        conversations.message_store(conversation_id=conversation.id, role="assistant", content=text, created_at=when)


@pytest.fixture
def shop(db: Any, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        seed()


@pytest.fixture
def live_shop(transactional_db: Any) -> None:
    seed()


def _texts(out: dict[str, Any]) -> list[str]:
    return [line.split("] ", 1)[1] for line in out["text"].splitlines()[1:]]


def test_last_week_ranks_the_turn_of_that_week_first(shop):
    plain = autorecall.context_for_prompt(prompt="what did we decide about the invoice rounding", project="shop",
                                          as_of=AS_OF, record=False)
    assert _texts(plain)[:2] == [OLDER, LAST_WEEK] and plain["time_filter"] is None
    out = autorecall.context_for_prompt(prompt=ASKED, project="shop", as_of=AS_OF, record=False)
    assert _texts(out)[:2] == [LAST_WEEK, OLDER]  # a boost, not a filter: the January turn stays
    assert out["items"][0]["source"]["date"] == "2024-03-13"
    assert out["items"][0]["score"] > out["items"][1]["score"]
    report = out["time_filter"]
    assert (report["from_text"], report["start"], report["end"], report["used"]) == (
        "last week", "2024-03-11T00:00:00+00:00", "2024-03-18T00:00:00+00:00", ["boost"])
    # "week" names when, not what: it is not one of the words an item must share.
    assert "week" not in out["gate"]["terms"]
    # Read from today (no as_of), that week is long past: no boost, the better match leads again.
    today = autorecall.context_for_prompt(prompt=ASKED, project="shop", record=False)
    assert _texts(today)[0] == OLDER and today["time_filter"]["as_of"] > AS_OF


def test_an_order_question_lists_the_block_oldest_first(shop):
    out = autorecall.context_for_prompt(prompt="which invoice rounding did we decide first, half-even or half-up?",
                                        project="shop", as_of=AS_OF, record=False)
    assert out["time_filter"]["used"] == ["order"]
    timeline = out["time_filter"]["timeline"]
    assert {entry["id"] for entry in timeline} == {item["id"] for item in out["items"]}
    assert [entry["created_at"][:10] for entry in timeline] == ["2024-01-15", "2024-03-13"]


def test_unreadable_time_words_are_ignored_and_a_bad_as_of_is_refused(shop):
    out = autorecall.context_for_prompt(prompt="what did we decide about the invoice rounding in Q3", project="shop",
                                        as_of=AS_OF, record=False)
    assert out["items"] and out["time_filter"]["used"] == ["ignored"] and "Q3" in out["time_filter"]["message"]
    for bad in ("last tuesday", "2024-02-30", 17):
        with pytest.raises(InvalidInput) as error:
            autorecall.context_for_prompt(prompt=ASKED, as_of=bad)
        assert error.value.field == "as_of"
    # An empty prompt still checks as_of, and answers nothing.
    assert autorecall.context_for_prompt(prompt="", as_of=AS_OF)["time_filter"] is None


def test_winni_context_reads_time_through_mcp(live_shop, mcp: McpClient):
    out = mcp.call("winni_context", {"prompt": ASKED, "project": "shop", "as_of": AS_OF})
    assert _texts(out)[:2] == [LAST_WEEK, OLDER]
    assert out["time_filter"]["from_text"] == "last week" and out["time_filter"]["used"] == ["boost"]
    unread = mcp.call("winni_context", {"prompt": "what did we decide about the invoice rounding in Q3",
                                        "project": "shop", "as_of": AS_OF})
    assert unread["time_filter"]["used"] == ["ignored"] and unread["items"]
    error = mcp.call_error("winni_context", {"prompt": ASKED, "as_of": "the day after"})
    assert "as_of" in error and "ISO 8601" in error


def test_recall_context_reads_time_over_rest(shop, api):
    url = "/api/v1/recall/context"
    response = api.post(url, {"prompt": ASKED, "project": "shop", "as_of": "2024-03-24"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert _texts(body)[:2] == [LAST_WEEK, OLDER] and body["time_filter"]["used"] == ["boost"]
    unread = api.post(url, {"prompt": "what did we decide about the invoice rounding in Q3", "project": "shop"},
                      format="json").json()
    assert unread["time_filter"]["used"] == ["ignored"] and "Q3" in unread["time_filter"]["message"]
    bad = api.post(url, {"prompt": ASKED, "as_of": "soon"}, format="json")
    assert bad.status_code == 400 and "as_of" in bad.json()["error"]["fields"], bad.content
