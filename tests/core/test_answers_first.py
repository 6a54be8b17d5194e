"""Answers before questions (issue #44.1, #44.7): a user turn that asks and the turn that answers it
rank as one round, shown as the answer with the question folded into it, never the question above
its answer; an earlier prompt repeating the query is not evidence; rows saying the same thing show
once. One rule (core.recall.answers_first) through automatic recall, REST and MCP recall
(winni_recall over the real streamable-HTTP transport) and the admin's search page; the global
memory still comes into the project."""
import re
from typing import Any

import pytest

from agents import autorecall
from conversations import services as conversations
from core import projects
from core.recall import answers_first, rank, recall, repeats
from core.recall_across import recall_by_kind
from memory import services as memories
from tests.support import McpClient

ASKED = "What did we decide about money amounts in the shop?"
DECISION = ("Decision: store every money amount in the shop as integer cents (BIGINT), never as floats; "
            "the invoice totals are summed in cents too.")
QUERY = "what did we decide about money amounts"
GLOBAL = "Money is integer cents."
OUTPUT = "3 failed, 41 passed in 2.31s (tests/test_money.py)"


def seed() -> dict[str, Any]:
    """Project "shop": a session that asked about money and got the decision, ran the tests twice
    (the same output both times); a later session that asked again, never answered; a statement
    about money by the user; a global memory."""
    shop = projects.project_create(name="shop", path="/work/shop")
    first = conversations.conversation_begin(session_id="money-one", project=shop)
    turns = {}
    for role, text in (("user", ASKED), ("assistant", "Let me look at the invoice code first."),
                       ("tool", OUTPUT), ("assistant", DECISION), ("user", "run the tests"), ("tool", OUTPUT),
                       ("assistant", "Done.")):
        message = conversations.message_store(conversation_id=first.id, role=role, content=text)
        turns.setdefault(role, []).append(str(message.id))
    later = conversations.conversation_begin(session_id="money-two", project=shop)
    unanswered = conversations.message_store(conversation_id=later.id, role="user",
                                             content="Do the money amounts in the refund export use cents as well?")
    statement = conversations.message_store(
        conversation_id=later.id, role="user",
        content="For the record: the shop decided money amounts in refunds are rounded half up.")
    memory = memories.memory_store(content=GLOBAL)[0]
    return {"shop": shop, "question": turns["user"][0], "decision": turns["assistant"][1],
            "outputs": turns["tool"], "unanswered": str(unanswered.id), "statement": str(statement.id),
            "global": str(memory.pk)}


@pytest.fixture
def money(db: Any, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    with django_capture_on_commit_callbacks(execute=True):
        return seed()


@pytest.fixture
def live_money(transactional_db: Any) -> dict[str, Any]:
    return seed()


def message_ids(results: list[dict[str, Any]]) -> list[str]:
    return [row["id"] for row in results if row["kind"] == "message"]


def assert_answer_first(results: list[dict[str, Any]], money: dict[str, Any]) -> None:
    found = message_ids(results)
    assert money["question"] not in found, "the question is shown as its answer, not on its own"
    # The round ranks by its answer's own evidence and a share of its question's
    # (core.recall.QUESTION_SHARE): among the first, in the question's place.
    assert money["decision"] in found[:4], [(r["label"], r["text"][:40], r["score"]) for r in results]
    decision = next(row for row in results if row["id"] == money["decision"])
    assert decision["question"]["id"] == money["question"] and decision["question"]["text"] == ASKED
    assert money["global"] in {row["id"] for row in results}, "the global memory still comes into the project"


# --- the rule --------------------------------------------------------------------------------------


def test_repeats_is_word_for_word_not_topic():
    assert repeats("What did we decide about money amounts?", QUERY)
    assert repeats("WHAT did we decide, about money amounts", QUERY)
    assert not repeats(ASKED + " And for refunds?", QUERY)
    assert not repeats("", QUERY)


def test_a_turn_asks_with_a_question_mark_or_a_question_word():
    from conversations.services.rounds import asks

    assert asks(ASKED) and asks("how do we store money amounts") and asks("Which port?\nThe log: …")
    assert asks("The tests fail on main. Can you fix them?")
    assert not asks("For the record: the staging database listens on 5433.")
    assert not asks("Decision: integer cents.") and not asks("run the tests")


def test_what_a_question_turn_states_keeps_its_score(db):
    """A turn that tells something and asks at its end is evidence for what it tells: when the
    query found it there, its round keeps its score whole (LongMemEval_S's users state their facts
    so); found in what it asks, the answer gets QUESTION_SHARE of it, as for a turn that only asks."""
    from conversations.models import Message
    from conversations.services import message_recall_scope, message_states
    from core.recall import QUESTION_SHARE, question_share

    telling = ("I moved the staging database of the shop to port 5433 last week. "
               "Which name should the new replica get?")
    told = Message(role="user", content=telling)
    assert message_states(told, "staging database port") == 1.0
    assert message_states(told, "name of the new replica") == 0.0
    assert message_states(told, "the replica of the staging database") == pytest.approx(2 / 3)
    assert message_states(Message(role="user", content=ASKED), QUERY) == 0.0
    assert message_states(Message(role="user", content="how do we store money amounts"), "money amounts") == 0.0

    chat = conversations.conversation_begin(session_id="told")
    told = conversations.message_store(conversation_id=chat.id, role="user", content=telling)
    reply = conversations.message_store(conversation_id=chat.id, role="assistant", content="Call it replica-east.")
    scope = {"message": message_recall_scope(project=None)}
    for query, share in (("staging database port", 1.0), ("which name for the new replica", QUESTION_SHARE)):
        hits = rank(query=query, scopes=scope, limit=10, mode="fts")
        asked = next(hit for hit in hits if hit.key == str(told.pk))
        assert question_share(asked, query) == share
        [round_] = [hit for hit in answers_first(hits, query=query, scopes=scope) if hit.key == str(reply.pk)]
        assert round_.question.pk == told.pk and round_.fused == pytest.approx(max(
            asked.fused * share, next((hit.fused for hit in hits if hit.key == str(reply.pk)), 0.0)))


def test_a_question_ranks_as_its_answer_and_an_unanswered_one_stays(money):
    results = recall(query=QUERY, filters={"project": "shop"}, limit=10)["results"]
    assert_answer_first(results, money)
    found = message_ids(results)
    assert money["unanswered"] in found  # nobody answered it: it is the only evidence of its round
    assert money["statement"] in found  # a statement is evidence itself, not a question
    statement = next(row for row in results if row["id"] == money["statement"])
    assert statement["question"] is None


def test_a_repeated_prompt_is_not_evidence_but_its_answer_is(money):
    results = recall(query=ASKED, filters={"project": "shop"}, limit=10)["results"]
    assert money["question"] not in message_ids(results)
    decision = next(row for row in results if row["id"] == money["decision"])
    assert decision["question"] is None  # the repeat is left out, not folded in


def test_a_prompt_given_again_is_not_evidence_but_what_was_done_is(db):
    """An instruction repeated in a later session ("build the docker image") found the earlier
    prompt word for word: that is the prompt itself, left out; the reply that did it stays."""
    chat = conversations.conversation_begin(session_id="docker-one")
    prompt = conversations.message_store(conversation_id=chat.id, role="user", content="Build the Docker image.")
    reply = conversations.message_store(conversation_id=chat.id, role="assistant",
                                        content="Built the docker image with `docker build -t ledger .` (412 MB).")
    found = message_ids(recall(query="build the docker image", limit=10)["results"])
    assert str(prompt.pk) not in found and str(reply.pk) in found
    # A prompt saying more than the query is evidence.
    longer = conversations.message_store(conversation_id=chat.id, role="user",
                                         content="build the docker image and push it with the release tag")
    found = message_ids(recall(query="build the docker image", limit=10)["results"])
    assert str(longer.pk) in found


def test_asking_for_user_turns_keeps_the_question(money):
    results = recall(query=QUERY, filters={"project": "shop", "role": "user"}, limit=10)["results"]
    assert money["question"] in message_ids(results) and money["decision"] not in message_ids(results)


def test_the_same_output_twice_shows_once(money):
    from conversations.services import message_recall_scope

    scope = {"message": message_recall_scope(project=money["shop"])}
    hits = rank(query="3 failed 41 passed", scopes=scope, limit=10, mode="fts")
    assert {hit.key for hit in hits} >= set(money["outputs"])
    kept = answers_first(hits, query="3 failed 41 passed", scopes=scope)
    assert len({hit.key for hit in kept} & set(money["outputs"])) == 1


def test_automatic_recall_gives_the_answer_with_its_question_named(money):
    out = autorecall.context_for_prompt(prompt="What did we decide about storing money amounts, cents or floats?",
                                        project="shop", session_id="money-three", record=False)
    messages = [item for item in out["items"] if item["kind"] == "message"]
    assert messages[0]["id"] == money["decision"], out["text"]
    assert messages[0]["source"]["question_turn"] == 1
    assert money["question"] not in {item["id"] for item in out["items"]}
    assert "(answering turn 1: What did we decide about money amounts in the shop?)" in out["text"]
    assert out["text"].count("integer cents (BIGINT)") == 1


# --- interfaces ------------------------------------------------------------------------------------


def test_automatic_recall_names_a_long_question_by_what_the_prompt_asks_of_it(db, django_capture_on_commit_callbacks):
    """A question folded into its reply is named in ASKED_CHARS: a long one by the part that holds
    the prompt's words, not by its first characters."""
    with django_capture_on_commit_callbacks(execute=True):
        ledger = projects.project_create(name="ledger", path="/work/ledger")
        chat = conversations.conversation_begin(session_id="told-port", project=ledger)
        conversations.message_store(conversation_id=chat.id, role="user", content=(
            "Good morning, I spent yesterday on the invoice layout and the colours of the settings page. "
            "I moved the ledger staging database to port 5433, the old port clashed with the shop. "
            "Can you look at how the nightly export retries?"))
        conversations.message_store(conversation_id=chat.id, role="assistant", content=(
            "The nightly export retries 5 times with a 30 second pause between attempts."))
    out = autorecall.context_for_prompt(prompt="Which port does the ledger staging database listen on?",
                                        project="ledger", session_id="later", record=False)
    named = re.search(r"\(answering turn 1: (.*)\)", out["text"])
    assert named is not None and "port 5433" in named.group(1), out["text"]
    assert len(named.group(1)) <= autorecall.ASKED_CHARS + 4 and not named.group(1).startswith("Good morning")


def test_rest_recall_puts_the_answer_first(money, api):
    response = api.get("/api/v1/recall", {"query": QUERY, "project": "shop"})
    assert response.status_code == 200
    assert_answer_first(response.json()["results"], money)


def test_the_admin_search_page_shows_the_answer_with_its_question(money, client, staff_user):
    client.force_login(staff_user)
    response = client.get("/admin/search/", {"q": QUERY, "project": "shop"})
    hits = [hit for hit in response.context["hits"] if hit["kind"] == "message"]
    assert hits[0]["id"] == money["decision"] and re.sub(r"</?mark>", "", hits[0]["asked"]) == ASKED
    assert money["question"] not in {hit["id"] for hit in hits}
    assert b"winni-asked" in response.content
    direct = recall_by_kind(query=QUERY, filters={"project": "shop"})["results"]
    assert money["global"] in {row["id"] for row in direct}


def test_the_admin_search_counts_a_question_in_its_round_as_recall_does(db, django_capture_on_commit_callbacks):
    # A reply that did not answer its question ("Why did we drop the index …?" then a long change
    # log) held all the question's words on the admin's page, and ranked above the turn stating the
    # decision. The round holds its question at the share recall gives it (core.recall.question_share).
    asked = "Why did we drop the index on orders.customer_url? The import got slow last week."
    with django_capture_on_commit_callbacks(execute=True):
        shop = projects.project_create(name="shop", path="/work/shop")
        first = conversations.conversation_begin(session_id="index-one", project=shop)
        conversations.message_store(conversation_id=first.id, role="user", content=asked)
        unanswered = conversations.message_store(
            conversation_id=first.id, role="assistant",
            content="Done: the refund page handles partial webhooks now. The migration adds an index on "
                    "orders.refund_amount, the permission lookup moved out of the loop, and all 398 tests pass.")
        later = conversations.conversation_begin(session_id="index-two", project=shop)
        conversations.message_store(conversation_id=later.id, role="user", content="The import is done, thanks.")
        decision = conversations.message_store(
            conversation_id=later.id, role="assistant",
            content="Worth knowing: we dropped the index on orders.customer_url because writes were 80x "
                    "slower and no query used it (SHOP-1925).")
    found = recall_by_kind(query="What did we decide about the index on orders.customer_url?",
                           filters={"project": "shop"}, kinds=["message"])["results"]
    assert [row["id"] for row in found][:2] == [str(decision.id), str(unanswered.id)], \
        [(row["text"][:50], row["strength"], row["coverage"]) for row in found]


@pytest.mark.live
def test_mcp_winni_recall_puts_the_answer_first(live_money, mcp: McpClient):
    # The compact rows (MCP's default) name the answer alone; the full hits carry its question.
    rows = message_ids(mcp.call("winni_recall", {"query": QUERY, "project": "shop"})["results"])
    assert live_money["question"] not in rows and live_money["decision"] in rows[:4], rows
    full = mcp.call("winni_recall", {"query": QUERY, "project": "shop", "detail": "full"})["results"]
    assert_answer_first(full, live_money)


def test_rest_recall_takes_an_agents_search_for_a_question_not_evidence(db, api, django_capture_on_commit_callbacks):
    # A tool call whose query asks (an MCP search quoting a question) echoes it, it is not
    # evidence: left out, lending its round nothing; a search that only names things stays
    # evidence. Through REST.
    import json

    asked = "How many times does the report-merge job retry?"
    with django_capture_on_commit_callbacks(execute=True):
        billing = projects.project_create(name="billing", path="/work/billing")
        first = conversations.conversation_begin(session_id="retry-one", project=billing)
        calls = {}
        for role, text in (
                ("user", "Look into the report-merge job, it failed overnight."),
                ("tool", {"tool_name": "mcp__winni__dewey_search", "tool_input": {"query": asked, "limit": 5},
                          "tool_response": {"results": [], "total": 0}}),
                ("tool", {"tool_name": "WebSearch", "tool_input": {"query": "report-merge job"},
                          "tool_response": "Scheduling jobs with cron: a tutorial."}),
                ("assistant", "Nothing stored about it yet; I will read the scheduler code.")):
            message = conversations.message_store(conversation_id=first.id, role=role,
                                                  content=text if isinstance(text, str) else json.dumps(text))
            calls[role if role != "tool" else json.loads(message.content)["tool_name"]] = str(message.id)
        later = conversations.conversation_begin(session_id="retry-two", project=billing)
        statement = str(conversations.message_store(
            conversation_id=later.id, role="user",
            content="For the record: the report-merge job retries 5 times with exponential backoff.").id)

    def results(query: str) -> list[dict[str, Any]]:
        response = api.get("/api/v1/recall", {"query": query, "project": "billing", "kinds": "message"})
        assert response.status_code == 200, response.content
        return response.json()["results"]

    for query in (asked, "what did we decide about the report-merge job retry"):
        found = results(query)
        assert message_ids(found)[0] == statement, [(r["label"], r["text"][:40], r["score"]) for r in found]
        assert calls["mcp__winni__dewey_search"] not in message_ids(found)  # it echoes a question
        assert calls["WebSearch"] in message_ids(found)  # its query asks nothing: evidence
        reply = next((row for row in found if row["id"] == calls["assistant"]), None)
        assert reply is None or reply["question"] is None  # the echo lends its round nothing


def test_an_echo_does_not_set_the_scale_the_answer_is_measured_on(db, api, django_capture_on_commit_callbacks):
    # The MCP proxy stores an agent's search as `{"tool": …, "arguments": {"query": …}}`: a few
    # words, every one of the question's. Each side's scores are scaled between its best and worst
    # candidate; with the echo among them it was the best, and the turn stating the answer scaled
    # low against a row nobody is shown. Echoes leave before the scaling.
    import json

    asked = "How many times does the report-merge job retry?"
    with django_capture_on_commit_callbacks(execute=True):
        billing = projects.project_create(name="billing", path="/work/billing")
        first = conversations.conversation_begin(session_id="echo-scale-one", project=billing)
        for role, text in (("user", "Look into the report-merge job, it failed overnight."),
                           ("tool", {"tool": "winni_recall", "arguments": {"query": asked}}),
                           ("tool", {"tool": "WebSearch", "arguments": {"query": "report-merge job"}}),
                           ("assistant", "Nothing stored about it yet; I will read the scheduler code.")):
            conversations.message_store(conversation_id=first.id, role=role,
                                        content=text if isinstance(text, str) else json.dumps(text))
        later = conversations.conversation_begin(session_id="echo-scale-two", project=billing)
        statement = str(conversations.message_store(
            conversation_id=later.id, role="user",
            content="For the record: the report-merge job retries 5 times with exponential backoff.").id)
    response = api.get("/api/v1/recall", {"query": asked, "project": "billing", "kinds": "message"})
    assert response.status_code == 200, response.content
    found = response.json()["results"]
    assert found[0]["id"] == statement, [(r["label"], r["text"][:40], r["score"]) for r in found]
