"""The admin in headless Chromium (Debian's, driven by Playwright) against a live Winni: log in,
read the dashboard's charts, search and open a hit, read a transcript. Screenshots of each page
go to test-artifacts/admin/ for a reviewer."""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any, Iterator

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from tests.admin_data import LONG_TURNS, AdminCorpus, build_admin_corpus, build_cache_activity
from tests.support import ROOT, LiveServer

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts" / "admin"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (./winni test installs it)"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running in this thread; the test's own ORM calls
    # (fixtures) are plain synchronous code, so tell Django they are safe here.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )
        yield chromium
        chromium.close()
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def admin_page(browser: Any, winni_server: LiveServer, transactional_db: Any) -> Iterator[Any]:
    """A browser tab logged in to the live server's admin through the login form."""
    get_user_model().objects.create_superuser("ada", "ada@example.com", "pw-ada-123")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=winni_server.url)
    tab = context.new_page()
    tab.goto("/admin/login/?next=/admin/")
    tab.fill("#id_username", "ada")
    tab.fill("#id_password", "pw-ada-123")
    tab.click("input[type=submit]")
    tab.wait_for_url("**/admin/")
    yield tab
    context.close()


@pytest.fixture
def corpus(admin_page: Any) -> AdminCorpus:
    corpus = build_admin_corpus()
    corpus.cache = build_cache_activity()
    return corpus


@pytest.fixture
def page(admin_page: Any, corpus: AdminCorpus) -> Any:
    admin_page.reload()  # the dashboard again, now with the corpus
    return admin_page


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def chart_values(page: Any, title: str) -> dict[str, str]:
    figure = page.locator(f'figure[data-chart="{title}"]')
    return {mark.get_attribute("data-label"): mark.get_attribute("data-value")
            for mark in figure.locator(".mark").all()}


def test_login_and_dashboard_charts_show_the_fixtures(page: Any, corpus: AdminCorpus):
    shot(page, "01-dashboard")
    assert page.locator('[data-store="Conversations"] .winni-tile-count').inner_text() == "4"

    per_day = chart_values(page, "Messages per day (last 30 days, UTC)")
    for day, count in corpus.per_day.items():
        assert per_day[day.strftime("%b %d")] == str(count)
    # Bars are actually drawn: a day with messages has a bar with height.
    today = dt.datetime.now(dt.timezone.utc).date().strftime("%b %d")
    bar = page.locator(f'figure[data-chart^="Messages per day"] rect[data-label="{today}"]')
    assert bar.bounding_box()["height"] > 0

    assert chart_values(page, "Conversations per session source") == {"Claude Code": "2", "API": "1", "MCP proxy": "1"}
    sizes = chart_values(page, "Database size per table")
    assert int(sizes["conversations_message"]) > 0
    assert page.locator("#winni-status").is_visible()

    hit_rate = chart_values(page, "Answer cache hit rate per day")
    assert hit_rate == {today: str(corpus.cache["hit_rate"])}
    assert page.locator('figure[data-chart="Answer cache hit rate per day"] circle.mark').is_visible()
    tiers = chart_values(page, "Cached answers per tier")
    assert sum(int(count) for count in tiers.values()) == 1  # the answered one (not the unanswered question)


def test_search_shows_a_question_as_its_answer(page: Any, corpus: AdminCorpus):
    """Answers before questions (core.recall.answers_first): the prompt "How do we deploy the
    kubernetes cluster for staging?" is found as the reply that answers it, the question under it."""
    page.goto(page.url.split("/admin/")[0] + "/admin/search/?q=deploy+kubernetes+cluster+staging&kind=message")
    hits = page.locator(".winni-hit")
    asked = hits.filter(has=page.locator(".winni-asked"))
    assert asked.count() == 1
    answer = asked.first
    assert "helm chart" in answer.locator(".winni-snippet").inner_text()
    assert "kubernetes" in " ".join(answer.locator(".winni-asked mark").all_inner_texts()).lower()
    assert answer.locator(".winni-hit-title").get_attribute("href").endswith("?turn=4#turn-4")
    snippets = hits.locator(".winni-snippet").all_inner_texts()
    assert not any(text.startswith("How do we deploy") for text in snippets)  # never on its own
    shot(page, "02b-search-answer-first")


def test_search_and_open_a_hit_at_its_turn(page: Any, corpus: AdminCorpus):
    page.fill(".winni-search-box input[name=q]", "flamingo checksum")
    page.click(".winni-search-box button")
    page.wait_for_url("**/admin/search/?q=*")
    # The best hit comes first (hybrid recall may add weaker semantic neighbours after it).
    best = page.locator(".winni-hit").first
    assert best.locator("mark").first.inner_text().lower() == "flamingo"
    assert best.locator(".winni-hit-title").get_attribute("href").endswith("?turn=250#turn-250")
    shot(page, "02-search")
    # The kind (and project) filters sit beside the box and keep the query.
    page.select_option(".winni-search-box select[name=kind]", "message")
    page.click(".winni-search-box button")
    page.wait_for_url("**kind=message*")
    kinds = page.locator(".winni-hit").evaluate_all("hits => hits.map(h => h.dataset.kind)")
    assert kinds and set(kinds) == {"message"}
    assert page.locator(".winni-search-box input[name=q]").input_value() == "flamingo checksum"
    best = page.locator(".winni-hit").first

    best.locator(".winni-hit-title").click()
    page.wait_for_url("**#turn-250")
    turn = page.locator("#turn-250")
    assert "focus" in turn.get_attribute("class")
    assert "flamingo checksum" in turn.inner_text()
    # Scrolled to the turn: it is inside the viewport.
    box = turn.bounding_box()
    assert 0 <= box["y"] < 900
    shot(page, "03-transcript-at-hit")


def test_transcript_roles_folded_tools_and_metadata_on_demand(page: Any, corpus: AdminCorpus):
    page.click(f'a[href="{reverse("admin:conversations_conversation_changelist")}"]')
    page.click(f'a[href="{reverse("admin:conversations_conversation_transcript", args=[corpus.claude.id])}"]')
    roles = page.locator(".winni-turn").evaluate_all("nodes => nodes.map(n => n.dataset.role)")
    assert roles == ["system", "user", "tool", "assistant"]
    user_bg = page.locator(".role-user").evaluate("n => getComputedStyle(n).backgroundColor")
    assistant_bg = page.locator(".role-assistant").evaluate("n => getComputedStyle(n).backgroundColor")
    assert user_bg != assistant_bg

    tool_output = page.locator(".role-tool .winni-content")
    assert not tool_output.is_visible()  # folded
    page.click(".role-tool summary")
    assert tool_output.is_visible() and "web-1" in tool_output.inner_text()

    metadata = page.locator(".winni-conversation-head .winni-metadata pre")
    assert not metadata.is_visible()
    page.click(".winni-conversation-head .winni-metadata summary")
    assert "/src/winni" in metadata.inner_text()
    shot(page, "04-transcript")


def test_long_transcript_pages(page: Any, corpus: AdminCorpus):
    page.goto(reverse("admin:conversations_conversation_transcript", args=[corpus.long.id]))
    assert page.locator(".winni-turn").count() == 200
    page.locator(".winni-pages a", has_text="later").first.click()
    assert page.locator(".winni-turn").count() == LONG_TURNS - 200
    shot(page, "05-transcript-page-2")


# --- the stores' own editors, reached from the dashboard ------------------------------------


def test_an_invalid_medallion_shows_the_error_inline_and_saves_nothing(admin_page: Any):
    from medallions.models import Medallion

    page = admin_page
    page.click('[data-store="Medallions"] a')
    page.click(".object-tools a.addlink")
    page.fill("#id_graph_nodes", "repo:winni")
    page.fill("#id_high_level", "The admin dashboard.")
    page.locator("summary", has_text="Raw JSON").click()  # the experts' view, folded under the rows
    page.fill("#id_decisions", '[{"id": "d1", "statement": "Use SVG charts", "rationale": "offline",'
                               ' "confidence": 1.7, "status": "active"}]')
    page.click("input[name=_save]")
    error = page.locator(".field-decisions .errorlist").first
    assert "decisions[0].confidence" in error.inner_text()
    assert page.locator("#id_decisions").input_value().startswith('[{"id": "d1"')  # the input is kept
    shot(page, "08-medallion-error")
    assert Medallion.objects.count() == 0


def test_edit_and_activate_a_startup_context(admin_page: Any):
    from contexts import services as contexts

    contexts.context_set(name="old-notes", content="Yesterday's notes.", set_active=True, actor="test")
    contexts.context_set(name="deploy-notes", content="Draft.", set_active=False, actor="test")
    page = admin_page
    page.reload()
    page.click('[data-store="Startup contexts"] a')
    page.click('a:text-is("deploy-notes")')
    page.fill("#id_content", "Deploy with helm; staging first.")
    page.click("input[name=_save]")
    page.wait_for_url("**/contexts/startupcontext/")
    # The activation posts and comes back to the same list: wait for that page, or the message list
    # read may be the one torn down (it once read empty).
    with page.expect_navigation():
        page.locator("tr", has_text="deploy-notes").locator("button", has_text="Activate").click()
    assert page.locator(".messagelist").inner_text().startswith("'deploy-notes' is now the active")
    assert page.locator("tr", has_text="deploy-notes").locator("strong", has_text="active").is_visible()
    shot(page, "06-contexts")

    active = contexts.context_get()
    assert active is not None and active.name == "deploy-notes"
    assert active.content == "Deploy with helm; staging first."
    page.click('a:text-is("deploy-notes")')
    audit = page.locator(".field-audit_trail").inner_text()
    assert "admin:ada" in audit and "activate" in audit
    shot(page, "07-context-audit")


def test_forget_a_cache_entry(admin_page: Any):
    from memory.librarian import services as librarian
    from memory.librarian.models import QueryMemory

    librarian.librarian_remember(query="Where do the backups go?", answer="To WINNI_DATA_DIR/backups.")
    librarian.librarian_remember(query="Which port does Winni use?", answer="9020.")
    page = admin_page
    page.goto(reverse("admin:librarian_querymemory_changelist"))
    row = page.locator("tr", has_text="Where do the backups go?")
    row.locator("input.action-select").check()
    page.select_option("select[name=action]", "forget")
    page.click("button[name=index]")
    assert page.locator("tr", has_text="Where do the backups go?").count() == 0
    shot(page, "09-cache-forgot")
    assert list(QueryMemory.objects.values_list("query_text", flat=True)) == ["Which port does Winni use?"]


def test_a_project_page_shows_its_activity_and_merges_another_into_it(admin_page: Any):
    from conversations import services as conversations
    from core import projects

    app = projects.project_create(name="app", path="/src/app")
    old = projects.project_create(name="app-old")
    for project, session in ((app, "app-session"), (old, "old-session")):
        conversation = conversations.conversation_begin(session_id=session, project=project)
        conversations.message_store(conversation_id=conversation.id, role="user", content=f"hello from {session}")
    page = admin_page
    page.goto(reverse("admin:core_project_changelist"))
    page.click('a:text-is("app-old")')
    assert page.locator('[data-section="Conversations"]').inner_text().count("hello from") == 1  # one conversation
    page.select_option("#winni-merge select[name=into]", label="app (app)")
    page.click("#winni-merge button")
    page.wait_for_url(f"**{reverse('admin:core_project_change', args=[app.pk])}")
    assert page.locator(".messagelist").inner_text().startswith("Merged app-old into app")
    today = dt.datetime.now(dt.timezone.utc).date().strftime("%b %d")
    assert chart_values(page, "Messages per day in app (last 30 days, UTC)")[today] == "2"
    conversations_listed = page.locator('[data-section="Conversations"]').inner_text()
    assert "app-session" in conversations_listed and "old-session" in conversations_listed
    assert "/src/app" in page.locator(".inline-group").inner_text()
    shot(page, "09-project")
