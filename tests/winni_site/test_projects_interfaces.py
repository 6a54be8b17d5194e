"""Projects over every interface: REST (`/api/v1/projects/`, the `project` parameter of the other
endpoints), MCP (winni_projects and the `project` arguments, through the real transport) and the
admin (the project page, its merge form, a project column and filter on every list). Bad input:
an unknown project in a filter gives nothing, on a write a clear error; merging a project into
itself is refused."""
from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from contexts import services as contexts
from contexts.models import StartupContext
from conversations import services as conversations
from core import projects
from core.models import Project
from medallions import services as medallions
from memory import services as memories
from memory.librarian import services as librarian
from tests.medallion_support import document


def size(value: int | list) -> int:
    return value if isinstance(value, int) else len(value)


def fill(project: Project) -> None:
    """One row of each store in `project`, all about the quokka."""
    conversation = conversations.conversation_begin(session_id=f"{project.slug}-session", project=project)
    conversations.message_store(conversation_id=conversation.id, role="user", content="where does the quokka live?")
    memories.memory_store(content=f"the quokka of {project.slug} lives on Rottnest", project=project)
    contexts.context_set(name="rules", content="quokka rules", actor="t", project=project)
    medallions.medallion_create(document=document({"graph_nodes": [], "tags": [f"repo:{project.slug}"]}))
    librarian.librarian_remember(query="where is the quokka?", answer="Rottnest", project=project)


@pytest.mark.django_db
class TestRest:
    def test_projects_list_and_detail(self, api):
        app = projects.project_create(name="App", path="/src/app", remote="git@github.com:org/app.git")
        fill(app)
        projects.project_create(name="empty")
        listed = api.get("/api/v1/projects/").json()
        by_slug = {project["slug"]: project for project in listed["projects"]}
        assert listed["count"] == 2 and by_slug["app"]["counts"] == {
            "conversations": 1, "contexts": 1, "memories": 1, "cache_entries": 1, "medallions": 1}
        assert by_slug["empty"]["counts"]["conversations"] == 0
        assert {"kind": "remote", "value": "github.com/org/app"} in by_slug["app"]["keys"]
        assert api.get("/api/v1/projects/?project=nope").json() == {"projects": [], "count": 0}
        detail = api.get("/api/v1/projects/App/").json()
        assert detail["slug"] == "app" and detail["counts"]["conversations"] == 1
        missing = api.get("/api/v1/projects/nope/")
        assert missing.status_code == 404 and "project" in missing.json()["error"]["fields"]

    def test_filters_and_writes_name_a_project(self, api):
        app = projects.project_create(name="app")
        fill(app)
        for url, key in (("/api/v1/conversations/?project={}", "total"), ("/api/v1/memories/?project={}", "total"),
                         ("/api/v1/contexts/?project={}", "contexts"), ("/api/v1/medallions/?project={}", "medallions"),
                         ("/api/v1/messages/search/?query=quokka&mode=fts&project={}", "total"),
                         ("/api/v1/recall?query=quokka&mode=fts&project={}", "count"),
                         ("/api/v1/memories/search?query=quokka&project={}", "count")):
            found = api.get(url.format("app"))
            nothing = api.get(url.format("nope"))
            assert found.status_code == nothing.status_code == 200, url
            assert size(found.json()[key]) >= 1 and size(nothing.json()[key]) == 0, url
        created = api.post("/api/v1/conversations/", {"session_id": "s", "project": "app"}, format="json").json()
        assert created["project"] == "app"
        refused = api.post("/api/v1/contexts/", {"name": "x", "content": "y", "project": "nope"}, format="json")
        assert refused.status_code == 404 and "project" in refused.json()["error"]["fields"]
        assert "winni_project create" in refused.json()["error"]["message"]
        assert not StartupContext.objects.filter(name="x").exists()
        # A detail URL addresses a project's context with ?project=.
        assert api.get("/api/v1/contexts/rules/").status_code == 404
        assert api.get("/api/v1/contexts/rules/?project=app").json()["project"] == "app"
        assert api.get("/api/v1/contexts/active/?project=app").json()["content"] == "quokka rules"

    def test_merge(self, api):
        projects.project_create(name="one")
        fill(projects.project_create(name="two"))
        itself = api.post("/api/v1/projects/one/merge/", {"into": "one"}, format="json")
        assert itself.status_code == 409 and "itself" in itself.json()["error"]["message"]
        unknown = api.post("/api/v1/projects/one/merge/", {"into": "ghost"}, format="json")
        assert unknown.status_code == 404 and "target" in unknown.json()["error"]["fields"]
        merged = api.post("/api/v1/projects/two/merge/", {"into": "one"}, format="json").json()
        assert merged["moved"]["conversations"] == 1 and merged["into"]["counts"]["memories"] == 1
        assert list(Project.objects.values_list("slug", flat=True)) == ["one"]


@pytest.mark.live
def test_mcp_tools_take_and_filter_by_project(mcp_legacy):
    app = projects.project_create(name="app")
    fill(app)
    listed = mcp_legacy.call("winni_projects")
    assert [p["slug"] for p in listed["projects"]] == ["app"] and listed["projects"][0]["counts"]["medallions"] == 1
    assert mcp_legacy.call("winni_projects", {"project": "nope"})["count"] == 0
    begun = mcp_legacy.call("dewey_begin_conversation", {"session_id": "m", "project": "app"})
    assert begun["project"] == "app"
    error = mcp_legacy.call_error("dewey_set_startup_context", {"name": "r", "content": "c", "project": "nope"})
    assert "project" in error and "winni_project create" in error
    assert "project" in mcp_legacy.call_error("store_memory", {"content": "x", "project": "nope"})
    for tool, arguments, size in (
        ("dewey_list_conversations", {}, lambda r: r["total"]),
        ("dewey_search", {"query": "quokka", "mode": "fts"}, lambda r: r["total"]),
        ("winni_recall", {"query": "quokka", "mode": "fts"}, lambda r: r["count"]),
        ("search_memory", {"query": "quokka"}, lambda r: r["count"]),
        ("medallion_load_for_scope", {"scope": {}}, lambda r: len(r["medallions"])),
        ("dewey_list_startup_contexts", {}, lambda r: len(r["contexts"])),
    ):
        assert size(mcp_legacy.call(tool, {**arguments, "project": "app"})) >= 1, tool
        assert size(mcp_legacy.call(tool, {**arguments, "project": "nope"})) == 0, tool
    got = mcp_legacy.call("dewey_get_startup_context", {"project": "app"})
    assert (got["name"], got["project"]) == ("rules", "app")
    assert mcp_legacy.call("dewey_get_startup_context") is None  # no global context
    assert mcp_legacy.call("librarian_ask", {"query": "where is the quokka?", "project": "app"})["match"] == "exact"


@pytest.mark.django_db
class TestAdmin:
    @pytest.fixture
    def browser(self, staff_user) -> Client:
        client = Client()
        client.force_login(staff_user)
        return client

    def test_the_project_page_shows_its_rows_and_activity(self, browser):
        app = projects.project_create(name="app", path="/src/app")
        fill(app)
        fill(projects.project_create(name="other"))
        listing = browser.get(reverse("admin:core_project_changelist")).content.decode()
        assert "1 conversations · 1 contexts · 1 memories · 1 cache entries · 1 medallions" in listing
        page = browser.get(reverse("admin:core_project_change", args=[app.pk])).content.decode()
        assert 'data-chart="Messages per day in app (last 30 days, UTC)"' in page
        assert "app-session" in page and "other-session" not in page
        assert "the quokka of app" in page and "the quokka of other" not in page
        assert "rules (active)" in page and "/src/app" in page
        assert f"?project__id__exact={app.pk}" in page

    def test_every_list_has_a_project_column_and_filter(self, browser):
        app = projects.project_create(name="app")
        fill(app)
        fill(projects.project_create(name="other"))
        for name in ("conversations_conversation", "memory_memory", "medallions_medallion",
                     "contexts_startupcontext", "librarian_querymemory"):
            url = reverse(f"admin:{name}_changelist")
            everything = browser.get(url).content.decode()
            assert "column-project" in everything and "By project" in everything, name
            only_app = browser.get(f"{url}?project__id__exact={app.pk}")
            assert only_app.status_code == 200
            assert set(re.findall(r'class="field-project[^"]*">([^<]*)<', only_app.content.decode())) == {"app"}, name

    def test_merge_from_the_project_page(self, browser):
        one, two = projects.project_create(name="one"), projects.project_create(name="two")
        fill(two)
        url = reverse("admin:core_project_merge", args=[two.pk])
        itself = browser.post(url, {"into": two.pk}, follow=True).content.decode()
        assert "cannot be merged into itself" in itself and Project.objects.count() == 2
        done = browser.post(url, {"into": one.pk}, follow=True)
        assert "Merged two into one" in done.content.decode()
        assert list(Project.objects.values_list("slug", flat=True)) == ["one"]
        assert conversations.conversation_list(project="one")[1] == 1

    def test_a_context_with_an_unknown_project_cannot_be_made(self, browser):
        # The form offers existing projects only; a forged id is a form error, nothing is saved.
        response = browser.post(reverse("admin:contexts_startupcontext_add"),
                                {"name": "x", "content": "y", "project": "999"})
        assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
        assert not StartupContext.objects.exists()
