"""Automatic recall's service (winni_site.autorecall.context_for_prompt) and its interfaces: MCP
winni_context through the real streamable-HTTP transport and REST POST /api/v1/recall/context."""
from typing import Any

import pytest

from conversations import services as conversations
from core import projects
from medallions import services as medallions
from memory import services as memories
from tests.medallion_support import document
from tests.support import McpClient
from winni_site import autorecall, capture
from winni_site.models import Injection

DRIVER = ("We decided to use psycopg 3 as the database driver instead of asyncpg, because Django's "
          "ORM supports it natively and the connection pool is built in.")


def seed(*, other_project: bool = True) -> dict[str, Any]:
    """A project "shop" whose first session settled the database driver, a medallion holding that
    decision, a memory; and another project that talks about something else."""
    shop = projects.project_create(name="shop")
    first = conversations.conversation_begin(session_id="session-one", project=shop)
    for role, text in (("user", "Which PostgreSQL driver should the shop use, psycopg or asyncpg?"),
                       ("assistant", DRIVER),
                       ("user", "run the tests"),
                       ("assistant", "All 212 tests passed.")):
        conversations.message_store(conversation_id=first.id, role=role, content=text)
    memory = memories.memory_store(content="The shop's invoices are rendered with WeasyPrint to PDF.",
                                   project="shop")[0]
    medallion = medallions.medallion_create(document=document(
        scope={"graph_nodes": [], "tags": ["repo:shop"]},
        decisions=[{"id": "D-7", "statement": "Use psycopg 3 as the PostgreSQL database driver",
                    "rationale": "native Django support and a built-in pool", "confidence": 0.9,
                    "status": "active"}],
        open_questions=[{"id": "Q-2", "question": "Should invoices be archived to S3?", "blocked_on": "",
                         "priority": "low"}],
        affordances={"recommended_entry_points": [], "avoid_repeating": [],
                     "invariants": ["Never store card numbers in the database"]}))
    if other_project:
        garden = projects.project_create(name="garden")
        talk = conversations.conversation_begin(session_id="garden-one", project=garden)
        conversations.message_store(conversation_id=talk.id, role="user",
                                    content="The tomatoes need watering every morning in July.")
    return {"shop": shop, "first": first, "memory": memory, "medallion": medallion}


@pytest.fixture
def shop(db: Any, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    with django_capture_on_commit_callbacks(execute=True):
        return seed()


def test_a_related_prompt_brings_back_the_decision_with_its_source(shop):
    out = autorecall.context_for_prompt(prompt="Which database driver do we use for PostgreSQL?",
                                        project="shop", session_id="session-two")
    assert out["gate"]["injected"] is True
    assert out["text"].startswith(autorecall.HEADER)
    assert "psycopg 3" in out["text"]
    kinds = {item["kind"] for item in out["items"]}
    assert "decision" in kinds and "message" in kinds
    decision = next(item for item in out["items"] if item["kind"] == "decision")
    assert decision["source"]["medallion_id"] == str(shop["medallion"].id)
    assert decision["id"] == f"{shop['medallion'].id}:D-7"
    message = next(item for item in out["items"] if item["kind"] == "message")
    assert message["source"]["session_id"] == "session-one" and message["source"]["turn"] in (1, 2)
    assert message["source"]["conversation_id"] == str(shop["first"].id)
    assert f"session session-one · turn {message['source']['turn']}" in out["text"]
    assert "tomatoes" not in out["text"]  # another project's turns stay out


@pytest.mark.parametrize("prompt", ["run the tests", "thanks", "continue", "commit this", "fix the lint errors"])
def test_generic_prompts_get_nothing(shop, prompt):
    out = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-two")
    assert out == {"text": "", "items": [], "gate": out["gate"]} and out["gate"]["injected"] is False
    assert not Injection.objects.exists()


def test_a_question_the_store_cannot_answer_gets_nothing(shop):
    out = autorecall.context_for_prompt(prompt="When do the tomatoes need watering?", project="shop",
                                        session_id="session-two")
    assert out["text"] == "" and out["items"] == []


def test_the_session_own_turns_are_left_out(shop):
    out = autorecall.context_for_prompt(prompt="Which database driver do we use for PostgreSQL?",
                                        project="shop", session_id="session-one")
    assert all(item["source"].get("session_id") != "session-one" for item in out["items"])
    assert all(item["kind"] != "message" for item in out["items"])


def test_empty_prompt_and_bad_max_chars(shop):
    for prompt in ("", "   \n", None):
        assert autorecall.context_for_prompt(prompt=prompt)["text"] == ""
    for bad in (199, 50_001, "4000", True):
        with pytest.raises(autorecall.InvalidInput) as caught:
            autorecall.context_for_prompt(prompt="psycopg driver", max_chars=bad)
        assert caught.value.field == "max_chars" and "max_chars" in caught.value.message


def test_the_budget_bounds_the_block(shop):
    small = autorecall.context_for_prompt(prompt="Which database driver do we use for PostgreSQL?",
                                          project="shop", max_chars=400)
    assert 0 < len(small["text"]) <= 400
    large = autorecall.context_for_prompt(prompt="Which database driver do we use for PostgreSQL?",
                                          project="shop", max_chars=20_000)
    assert len(large["items"]) >= len(small["items"])


def test_unknown_project_and_session_answer_from_the_whole_store(shop):
    out = autorecall.context_for_prompt(prompt="When do the tomatoes need watering?", project="no-such-project",
                                        session_id="never-seen")
    assert out["gate"]["injected"] is True and "tomatoes" in out["text"]


def test_an_item_is_injected_once_per_session_until_compaction(shop):
    prompt = "Which database driver do we use for PostgreSQL?"
    first = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-two")
    assert first["items"]
    again = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-two")
    assert not {(i["kind"], i["id"]) for i in again["items"]} & {(i["kind"], i["id"]) for i in first["items"]}
    assert again["gate"]["repeated"] >= len(first["items"])
    other = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-three")
    assert [i["id"] for i in other["items"]] == [i["id"] for i in first["items"]]
    capture.capture_hook_event(payload={"hook_event_name": "SessionStart", "session_id": "session-two",
                                        "source": "compact"})
    after = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-two")
    assert [i["id"] for i in after["items"]] == [i["id"] for i in first["items"]]
    assert Injection.objects.filter(session_id="session-two", reset_at__isnull=False).count() == 1


def test_a_repeated_question_brings_the_cached_answer(shop):
    from memory.librarian.services.entries import librarian_remember

    librarian_remember(query="How are invoices rendered?", answer="With WeasyPrint, to PDF.", project="shop")
    out = autorecall.context_for_prompt(prompt="how are  invoices rendered?", project="shop")
    assert out["items"][0]["kind"] == "answer" and "With WeasyPrint, to PDF." in out["text"]


# --- interfaces --------------------------------------------------------------------------------


@pytest.fixture
def live_shop(transactional_db: Any) -> dict[str, Any]:
    return seed()


def test_winni_context_through_mcp(live_shop, mcp: McpClient):
    prompt = "Which database driver do we use for PostgreSQL?"
    out = mcp.call("winni_context", {"prompt": prompt, "project": "shop", "session_id": "mcp-session"})
    assert "psycopg 3" in out["text"] and out["items"]
    assert {"kind", "id", "score", "source"} <= set(out["items"][0])
    again = mcp.call("winni_context", {"prompt": prompt, "project": "shop", "session_id": "mcp-session"})
    assert not {i["id"] for i in again["items"]} & {i["id"] for i in out["items"]}
    assert mcp.call("winni_context", {"prompt": "run the tests", "project": "shop"})["text"] == ""
    assert mcp.call("winni_context", {"prompt": "  "})["items"] == []
    small = mcp.call("winni_context", {"prompt": prompt, "project": "shop", "max_chars": 300})
    assert len(small["text"]) <= 300
    error = mcp.call_error("winni_context", {"prompt": prompt, "max_chars": 100})
    assert "max_chars" in error and "200" in error


def test_winni_context_over_the_content_limit_through_mcp(live_shop, mcp_legacy: McpClient, settings):
    from django.conf import settings as django_settings

    too_big = "x" * (django_settings.WINNI_MAX_CONTENT_BYTES + 1)
    error = mcp_legacy.call_error("winni_context", {"prompt": too_big})
    assert "prompt" in error and "WINNI_MAX_CONTENT_BYTES" in error


def test_recall_context_over_rest(shop, api, settings):
    url = "/api/v1/recall/context"
    prompt = "Which database driver do we use for PostgreSQL?"
    response = api.post(url, {"prompt": prompt, "project": "shop", "session_id": "rest-session"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert "psycopg 3" in body["text"] and body["gate"]["injected"] is True
    again = api.post(url, {"prompt": prompt, "project": "shop", "session_id": "rest-session"}, format="json").json()
    assert not {i["id"] for i in again["items"]} & {i["id"] for i in body["items"]}
    # A compaction (SessionStart source compact, as the hook sends it) resets the session's record.
    api.post("/api/v1/capture/events", {"payload": {"hook_event_name": "SessionStart", "session_id": "rest-session",
                                                    "source": "compact"}}, format="json")
    after = api.post(url, {"prompt": prompt, "project": "shop", "session_id": "rest-session"}, format="json").json()
    assert [i["id"] for i in after["items"]] == [i["id"] for i in body["items"]]
    empty = api.post(url, {"prompt": ""}, format="json").json()
    assert empty["text"] == "" and empty["items"] == []
    bad = api.post(url, {"prompt": prompt, "max_chars": 60_000}, format="json")
    assert bad.status_code == 400 and "max_chars" in bad.content.decode()
    settings.WINNI_MAX_CONTENT_BYTES = 100
    big = api.post(url, {"prompt": "psycopg " * 30}, format="json")
    assert big.status_code == 413 and "prompt" in big.content.decode()
