"""Global memories apply in every project (issue #44.6): a search or recall within a project takes
the project's rows and the memories of no project, unless asked for the project only
(`project_only`); a memory of another project is never found. One rule,
core.projects.search_scope, through every path: REST (`/api/v1/recall`, `/api/v1/memories/search`,
`/api/v1/recall/context`), MCP (winni_recall, search_memory, winni_context through the real
transport), automatic recall, the librarian's knowledge and the admin's search. A token limited
to projects sees no global row, as before."""
from typing import Any

import pytest

from agents import autorecall
from conversations.models import Message
from core import access, projects
from memory import services as memories
from memory.librarian.services.ask import knowledge_answer
from memory.models import Memory
from tests.support import McpClient
from winni_site import auth

GLOBAL = "Money is integer cents: amounts are stored as integer cents, never as floats."
OTHER = "Money in the garden ledger is stored as decimal euros with two digits."
OWN = "The shop prints money amounts with two decimals on its invoices."
ASK = "what did we decide about money"
PROMPT = "How do we store money amounts, as integer cents or floats?"


def seed() -> dict[str, Any]:
    shop = projects.project_create(name="shop")
    projects.project_create(name="garden")
    return {
        "shop": shop,
        "global": str(memories.memory_store(content=GLOBAL)[0].pk),
        "other": str(memories.memory_store(content=OTHER, project="garden")[0].pk),
        "own": str(memories.memory_store(content=OWN, project="shop")[0].pk),
    }


@pytest.fixture
def money(db: Any, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    with django_capture_on_commit_callbacks(execute=True):
        return seed()


@pytest.fixture
def live_money(transactional_db: Any) -> dict[str, Any]:
    return seed()


def ids(results: list[dict[str, Any]], key: str = "id") -> set[str]:
    return {str(row[key]) for row in results}


# --- the rule ------------------------------------------------------------------------------------


def test_the_rule_takes_global_memories_within_a_project_unless_asked_not_to(money):
    def found(model: Any, **kwargs: Any) -> set[str]:
        rows = projects.search_scope("shop", model=model, **kwargs).apply(model.objects.all())
        return {str(pk) for pk in rows.values_list("pk", flat=True)}

    assert found(Memory) == {money["global"], money["own"]}
    assert found(Memory, project_only=True) == {money["own"]}
    assert projects.search_scope(None, model=Memory).apply(Memory.objects.all()).count() == 3
    assert projects.search_scope("nope", model=Memory).apply(Memory.objects.all()).count() == 0
    # A message of no project (a conversation before capture knew its project) stays out.
    assert not projects.search_scope("shop", model=Message).with_global
    with pytest.raises(Exception, match="project_only"):
        projects.search_scope("shop", model=Memory, project_only="yes")


def test_a_token_limited_to_the_project_still_sees_no_global_row(money):
    limited = access.Access(token="t", project_ids=frozenset({money["shop"].pk}), project_slugs=("shop",))
    with access.acting_as(limited):
        rows = projects.search_scope("shop", model=Memory).apply(Memory.objects.all())
        assert {str(pk) for pk in rows.values_list("pk", flat=True)} == {money["own"]}
        hits = memories.memory_search(query=PROMPT, project="shop", limit=20)
        assert money["global"] not in {str(hit.memory.pk) for hit in hits}


def test_every_service_finds_the_global_memory_in_a_project(money):
    from core.recall import recall
    from core.recall_across import recall_by_kind

    for project_only, expected in ((False, True), (True, False)):
        hits = memories.memory_search(query=PROMPT, project="shop", limit=20, project_only=project_only)
        found = {str(hit.memory.pk) for hit in hits}
        assert (money["global"] in found) is expected and money["other"] not in found
        results = recall(query=ASK, filters={"project": "shop"}, project_only=project_only)["results"]
        assert (money["global"] in ids(results)) is expected and money["other"] not in ids(results)
        across = recall_by_kind(query=ASK, filters={"project": "shop"}, project_only=project_only)["results"]
        assert (money["global"] in ids(across)) is expected and money["other"] not in ids(across)
    assert money["global"] in {source["id"] for source in knowledge_answer(ASK, money["shop"]).sources}


def test_automatic_recall_brings_the_global_memory_into_the_project(money):
    out = autorecall.context_for_prompt(prompt=PROMPT, project="shop", record=False)
    assert money["global"] in ids(out["items"]) and money["other"] not in ids(out["items"])
    alone = autorecall.context_for_prompt(prompt=PROMPT, project="shop", record=False, project_only=True)
    assert money["global"] not in ids(alone["items"]) and money["other"] not in ids(alone["items"])
    garden = autorecall.context_for_prompt(prompt=PROMPT, project="garden", record=False)
    assert money["global"] in ids(garden["items"]) and money["own"] not in ids(garden["items"])


# --- REST ----------------------------------------------------------------------------------------


def test_rest_recall_search_and_context_take_global_memories(money, api):
    recall = api.get("/api/v1/recall", {"query": ASK, "project": "shop"}).json()["results"]
    assert money["global"] in ids(recall) and money["other"] not in ids(recall)
    alone = api.get("/api/v1/recall", {"query": ASK, "project": "shop", "project_only": "true"}).json()["results"]
    assert money["global"] not in ids(alone) and money["own"] in ids(alone) and money["other"] not in ids(alone)
    posted = api.post("/api/v1/recall", {"query": ASK, "project": "shop", "project_only": True}, format="json")
    assert money["global"] not in ids(posted.json()["results"])

    search = api.get("/api/v1/memories/search", {"query": PROMPT, "project": "shop", "limit": 20}).json()["results"]
    assert money["global"] in ids(search, "memory_id") and money["other"] not in ids(search, "memory_id")
    only = api.get("/api/v1/memories/search",
                   {"query": PROMPT, "project": "shop", "limit": 20, "project_only": "true"}).json()["results"]
    assert money["global"] not in ids(only, "memory_id") and money["other"] not in ids(only, "memory_id")

    context = api.post("/api/v1/recall/context", {"prompt": PROMPT, "project": "shop"}, format="json").json()
    assert money["global"] in ids(context["items"])
    context = api.post("/api/v1/recall/context", {"prompt": PROMPT, "project": "shop", "project_only": True},
                       format="json").json()
    assert money["global"] not in ids(context["items"])
    bad = api.get("/api/v1/recall", {"query": ASK, "project_only": "perhaps"})
    assert bad.status_code == 400 and "project_only" in bad.json()["error"]["fields"]


def test_rest_with_a_token_limited_to_the_project_finds_no_global_memory(money, client):
    _, secret = auth.token_create(name="shop-agent", projects=["shop"])
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    recall = client.get("/api/v1/recall", {"query": ASK, "project": "shop"}, **headers).json()["results"]
    assert ids(recall) & {money["global"], money["other"]} == set() and money["own"] in ids(recall)
    search = client.get("/api/v1/memories/search", {"query": PROMPT, "project": "shop"}, **headers).json()["results"]
    assert money["global"] not in ids(search, "memory_id")


def test_the_admin_search_takes_a_project_and_the_global_memories(money, client, staff_user):
    client.force_login(staff_user)

    def shown(**params: str) -> set[str]:
        hits = client.get("/admin/search/", {"q": "money integer cents", **params}).context["hits"]
        return {str(hit["id"]) for hit in hits if hit["kind"] == "memory"}

    assert money["global"] in shown(project="shop") and money["other"] not in shown(project="shop")
    assert money["global"] not in shown(project="shop", project_only="1")
    assert money["other"] in shown()


# --- MCP -----------------------------------------------------------------------------------------


@pytest.mark.live
def test_mcp_tools_take_global_memories_unless_project_only(live_money, mcp: McpClient):
    recall = mcp.call("winni_recall", {"query": ASK, "project": "shop"})["results"]
    assert live_money["global"] in ids(recall) and live_money["other"] not in ids(recall)
    alone = mcp.call("winni_recall", {"query": ASK, "project": "shop", "project_only": True})["results"]
    assert live_money["global"] not in ids(alone) and live_money["other"] not in ids(alone)

    search = mcp.call("search_memory", {"query": PROMPT, "project": "shop", "limit": 20})["results"]
    assert live_money["global"] in ids(search, "memory_id") and live_money["other"] not in ids(search, "memory_id")
    only = mcp.call("search_memory", {"query": PROMPT, "project": "shop", "limit": 20, "project_only": True})
    assert live_money["global"] not in ids(only["results"], "memory_id")

    context = mcp.call("winni_context", {"prompt": PROMPT, "project": "shop"})
    assert live_money["global"] in ids(context["items"]) and live_money["other"] not in ids(context["items"])
    context = mcp.call("winni_context", {"prompt": PROMPT, "project": "shop", "project_only": True})
    assert live_money["global"] not in ids(context["items"])
