"""Issue #24's admin details, in headless Chromium against a live Winni (the fixtures are
test_admin_browser's): names, links, the favicon, read-only records, the answer cache table, the
empty search page, API tokens."""
from __future__ import annotations

import urllib.request
from typing import Any

import pytest
from django.urls import reverse

from tests.winni_site import test_admin_browser as base
from tests.winni_site.test_admin_browser import CHROMIUM, shot

# The browser, a logged-in tab and the corpus: the same fixtures as the admin's other browser tests.
browser, admin_page, corpus, page = base.browser, base.admin_page, base.corpus, base.page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live,
    pytest.mark.skipif(not __import__("pathlib").Path(CHROMIUM).exists(), reason="Debian's chromium is not installed"),
]


def status_of(page: Any, url: str) -> int:
    return page.request.get(url, max_redirects=5).status


def test_header_links_work_and_the_site_has_a_favicon(admin_page: Any):
    page = admin_page
    assert page.locator("#user-tools a", has_text="View site").count() == 0
    # Every link of the header answers (none leads to a 404).
    hrefs = page.locator("#header a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert hrefs
    for href in hrefs:
        assert status_of(page, href) < 400, href
    icon = page.locator('link[rel="icon"]').get_attribute("href")
    response = page.request.get(icon)
    assert response.status == 200 and "svg" in response.headers["content-type"]
    assert page.request.get("/favicon.ico").status == 200
    # The bare address opens the admin.
    page.goto("/")
    assert page.url.endswith(reverse("admin:index"))


def test_model_names_are_plural_english(admin_page: Any):
    names = admin_page.locator(".app-list th[scope=row] a, .module th[scope=row] a").all_inner_texts()
    assert "Memories" in names
    assert not [name for name in names if name.endswith("ys")], names


def test_read_only_records_have_no_save_buttons(page: Any, corpus: Any):
    from memory import services as memories

    memory, _ = memories.memory_store(content="Timestamps are stored in UTC.", tags=["time"])
    url = reverse("admin:conversations_conversation_change", args=[corpus.claude.pk])
    page.goto(url)
    assert page.locator(".submit-row").count() == 1, url
    assert page.locator(".submit-row input[type=submit]").count() == 0, url
    assert page.locator(".submit-row a", has_text="Close").is_visible(), url
    shot(page, "polish-01-read-only-conversation")
    # A memory is not read-only: saving it writes a new version (update_memory); adding saves too.
    for url in (reverse("admin:memory_memory_change", args=[memory.pk]), reverse("admin:memory_memory_add")):
        page.goto(url)
        assert page.locator("input[name=_save]").is_visible(), url


def test_answer_cache_table_fits_its_box(admin_page: Any):
    from memory.librarian import services as librarian

    librarian.librarian_remember(
        query="How do we store money amounts in the billing service when several currencies are involved "
              "and the reports need exact totals at the end of each month?",
        answer="As integer minor units with an ISO 4217 currency code.")
    librarian.librarian_remember(query="Which port does Winni use?", answer="9020.")
    page = admin_page
    page.goto(reverse("admin:librarian_querymemory_changelist"))
    results = page.locator("#changelist .results")
    widths = results.evaluate("n => [n.scrollWidth, n.clientWidth]")
    assert widths[0] <= widths[1], widths  # nothing to scroll sideways: every column shows
    expires = page.locator("#result_list th", has_text="expires").bounding_box()
    content = page.locator("#content").bounding_box()
    assert expires["x"] + expires["width"] <= content["x"] + content["width"]
    shot(page, "polish-02-answer-cache")


def test_the_empty_search_page_says_how_to_search(admin_page: Any):
    from memory import services as memories

    memories.memory_store(content="Deploys go through staging first.", tags=["deploy", "staging"])
    page = admin_page
    page.goto(reverse("admin:winni_search"))
    hints = page.locator(".winni-search-hints")
    assert hints.is_visible()
    text = hints.inner_text()
    assert '"connection pool"' in text and "messages" in text and "memories" in text
    page.locator(".winni-search-hints a", has_text="deploy").click()
    page.wait_for_url("**/admin/search/?q=deploy")
    assert page.locator(".winni-hit").count() >= 1
    shot(page, "polish-03-search-hints")


def test_a_superuser_creates_a_token_sees_its_secret_once_and_revokes_it(admin_page: Any, winni_server: Any):
    from winni_site import auth
    from winni_site.models import ApiToken

    page = admin_page
    page.goto(reverse("admin:winni_site_apitoken_changelist"))
    page.click(".object-tools a.addlink")
    page.fill("#id_name", "bad name!")
    page.click("input[name=_save]")
    assert "letters, digits" in page.locator(".field-name .errorlist").inner_text()
    page.fill("#id_name", "laptop-claude")
    page.click("input[name=_save]")
    secret = page.locator("#winni-token-secret").input_value()
    assert secret.startswith(auth.TOKEN_PREFIX)
    assert f'Bearer {secret}' in page.locator(".winni-connect").inner_text()
    shot(page, "polish-04-token-created")
    # The secret works, and it is never shown again.
    request = urllib.request.Request(winni_server.url + "/api/v1/conversations/",
                                     headers={"Authorization": f"Bearer {secret}"})
    assert urllib.request.urlopen(request).status == 200
    page.goto(reverse("admin:winni_site_apitoken_changelist"))
    assert secret not in page.content()
    page.click('a:text-is("laptop-claude")')
    assert secret not in page.content()
    assert page.locator(".submit-row input[type=submit]").count() == 0

    page.goto(reverse("admin:winni_site_apitoken_changelist"))
    page.locator("tr", has_text="laptop-claude").locator("input.action-select").check()
    page.select_option("select[name=action]", "revoke_selected")
    page.click("button[name=index]")
    assert "Revoked 1 token(s): laptop-claude" in page.locator(".messagelist").inner_text()
    assert page.locator("tr", has_text="laptop-claude").locator("td.field-state").inner_text() == "revoked"
    assert ApiToken.objects.get(name="laptop-claude").revoked_at is not None
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 401


def test_staff_without_superuser_cannot_create_tokens(client: Any, db: Any):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    staff = get_user_model().objects.create_user("bob", password="pw", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_apitoken", "add_apitoken"]))
    client.force_login(staff)
    assert client.get(reverse("admin:winni_site_apitoken_add")).status_code == 403
    listing = client.get(reverse("admin:winni_site_apitoken_changelist"))
    assert listing.status_code == 200 and b"revoke_selected" not in listing.content


# --- the dashboard ------------------------------------------------------------------------------


def test_dashboard_cached_answers_agree_with_the_cache_page(page: Any, corpus: Any):
    from memory.librarian.models import QueryMemory

    # The corpus asked one question nobody answered: an entry, but not a cached answer.
    assert QueryMemory.objects.filter(answer__isnull=True).exists()
    tile = page.locator('[data-store="Cached answers"]')
    assert tile.locator(".winni-tile-count").inner_text() == "1"
    tiers = base.chart_values(page, "Cached answers per tier")
    assert sum(int(count) for count in tiers.values()) == 1
    tile.locator("a").click()
    stats = page.locator("#cache-stats").inner_text()
    assert "1 cached answer (at most" in stats and "2 questions asked, 1 without an answer" in stats
    assert page.locator("p.paginator").inner_text().strip() == "1 question"
    assert page.locator("#result_list tbody tr").count() == 1


def test_dashboard_status_panel_and_charts_use_their_room(page: Any, corpus: Any):
    from core import health

    health.heartbeat_record()
    page.reload()
    panel = page.locator("#winni-status")
    box = panel.bounding_box()
    # Nothing sticks out of the panel, and a check's values are not squeezed into a narrow column.
    for element in panel.locator("table, .winni-check dd").all():
        inner = element.bounding_box()
        assert inner["x"] + inner["width"] <= box["x"] + box["width"] + 1
    model = panel.locator('.winni-check dd[data-key="model"]')
    line = model.evaluate("n => parseFloat(getComputedStyle(n).lineHeight)")
    assert model.bounding_box()["height"] < 1.6 * line, model.inner_text()
    assert model.bounding_box()["width"] > 0.4 * box["width"]
    shot(page, "polish-05-dashboard")
    # Each chart is as wide as its card (less the card's padding).
    for figure in page.locator(".winni-panel figure.winni-chart").all():
        card = figure.locator("xpath=..").evaluate("n => n.clientWidth - 24")
        svg = figure.locator("svg").bounding_box()["width"]
        assert svg >= 0.97 * card, (figure.get_attribute("data-chart"), svg, card)


# --- conversations list and transcripts --------------------------------------------------------


def _backfilled_conversation() -> Any:
    """A conversation imported in bulk with message times in the past, with tool turns of each
    stored shape and a Markdown reply."""
    import json

    from conversations import services as conversations

    week_ago = "2026-01-05T10:00:00Z"
    tool_use = {"tool_use": "Bash", "id": "toolu_1", "input": {"command": "pytest -q tests/test_cache.py"}}
    tool_result = {"tool_result": "3 passed in 0.4s", "tool_use_id": "toolu_1", "is_error": False}
    hook = {"tool_name": "Edit", "tool_input": {"file_path": "/src/app/money.py", "old_string": "float",
                                                "new_string": "Decimal"},
            "tool_response": {"filePath": "/src/app/money.py"}}
    conversation, _ = conversations.messages_store_bulk(
        session_id="sess-backfill", metadata={"source": "claude-code"},
        messages=[
            {"role": "user", "content": "  How do we store   money amounts?\nWe keep losing cents.  ",
             "created_at": week_ago},
            {"role": "tool", "content": json.dumps(tool_use), "created_at": "2026-01-05T10:00:05Z"},
            {"role": "tool", "content": json.dumps(tool_result), "created_at": "2026-01-05T10:00:09Z"},
            {"role": "tool", "content": json.dumps(hook), "metadata": {"tool_name": "Edit"},
             "created_at": "2026-01-05T10:01:00Z"},
            {"role": "assistant", "created_at": "2026-01-05T10:02:00Z",
             "content": "Use `Decimal`, never floats:\n\n```python\nfrom decimal import Decimal\n```\n\n"
                        "<script>window.pwned = 1</script> and [a link](javascript:alert(1))"},
        ])
    return conversation


def test_conversation_list_shows_first_prompts_ordered_by_last_activity(page: Any, corpus: Any):
    from conversations.models import Conversation

    backfilled = _backfilled_conversation()
    # Imported now, but its activity is January's: the message times, not the import time.
    stored = Conversation.objects.get(pk=backfilled.pk)
    assert stored.first_message_at.isoformat().startswith("2026-01-05T10:00:00")
    assert stored.last_message_at.isoformat().startswith("2026-01-05T10:02:00")
    page.goto(reverse("admin:conversations_conversation_changelist"))
    rows = page.locator("#result_list tbody tr")
    titles = rows.locator("td.field-conversation").all_inner_texts()
    assert titles[0] == "How do we deploy the kubernetes cluster for staging?"  # the latest activity
    assert titles[-1] == "How do we store money amounts? We keep losing cents."  # January: last
    assert "List the open pull requests about billing." in titles
    headers = page.locator("#result_list thead th").all_inner_texts()
    for column in ("CONVERSATION", "PROJECT", "SOURCE", "MESSAGES", "FIRST ACTIVITY", "LAST ACTIVITY"):
        assert column in [h.strip().upper() for h in headers], headers
    last = rows.last
    assert last.locator("td.field-source").inner_text() == "Claude Code"
    assert last.locator("td.field-message_count").inner_text() == "5"
    assert "Jan. 5, 2026" in last.locator("td.field-first_activity").inner_text()
    assert not any(str(c.pk) in title for c in Conversation.objects.all() for title in titles)
    shot(page, "polish-06-conversations")
    page.click("text=List the open pull requests about billing.")
    page.wait_for_url(f"**{reverse('admin:conversations_conversation_transcript', args=[corpus.proxy.pk])}")


def test_transcript_names_tools_and_renders_markdown_safely(page: Any, corpus: Any):
    backfilled = _backfilled_conversation()
    page.goto(reverse("admin:conversations_conversation_transcript", args=[backfilled.pk]))
    assert page.locator("[data-started]").inner_text() == "2026-01-05 10:00:00 UTC"
    assert page.locator("[data-last-activity]").inner_text() == "2026-01-05 10:02:00 UTC"
    summaries = page.locator(".role-tool summary").all_inner_texts()
    assert summaries[0].startswith("Bash `pytest -q tests/test_cache.py`"), summaries
    assert summaries[1].startswith("Bash result")
    assert summaries[2].startswith("Edit /src/app/money.py")
    page.locator(".role-tool summary").nth(1).click()
    assert "3 passed in 0.4s" in page.locator(".role-tool .winni-tool-output").first.inner_text()

    reply = page.locator(".role-assistant .winni-markdown")
    assert reply.locator("code").first.inner_text() == "Decimal"
    assert reply.locator("pre code").inner_text().strip() == "from decimal import Decimal"
    assert "<script>" in reply.inner_text()  # shown as text, not run
    assert page.evaluate("window.pwned") is None
    assert reply.locator("script").count() == 0
    assert reply.locator("a[href^='javascript']").count() == 0
    shot(page, "polish-07-transcript-tools-markdown")


# --- search ---------------------------------------------------------------------------------------


def _house_rule_corpus() -> dict[str, Any]:
    """The UTC rule stated once per kind, and nineteen messages using its words in passing."""
    from contexts import services as contexts
    from conversations import services as conversations
    from core import projects
    from medallions import services as medallions
    from memory import services as memories

    shop = projects.project_create(name="shop", path="/src/shop")
    rule = "Store every timestamp in UTC (ISO 8601 with a Z); convert to local time only in the UI."
    memory, _ = memories.memory_store(content=rule, tags=["house-rules"], project="shop")
    medallion = medallions.medallion_create(document={
        "scope": {"graph_nodes": ["repo:shop"], "tags": ["project_state"]},
        "summary": {"high_level": "The shop's conventions.", "subsystems": []},
        "decisions": [{"id": "D-001", "statement": rule, "rationale": "one clock", "confidence": 0.9,
                       "status": "active"}],
        "open_questions": [], "affordances": {"recommended_entry_points": [], "avoid_repeating": [], "invariants": []},
    }, actor="test")
    context = contexts.context_set(name="house-rules", content=f"House rules:\n- {rule}\n- Money in cents.",
                                   set_active=True, actor="test", project="shop")
    passing = ["The UTC offset of the build server changed.", "Log timestamps are noisy today.",
               "We compared timestamps across two services.", "The timestamps in the CSV export look odd."]
    talk = conversations.conversation_begin(session_id="sess-shop-1", metadata={"source": "claude-code"},
                                            project=shop)
    conversations.message_store(conversation_id=talk.id, role="user", content="Why is the nightly export late again?")
    for i in range(19):
        conversations.message_store(conversation_id=talk.id, role="assistant" if i % 2 else "user",
                                    content=passing[i % len(passing)])
    conversations.message_store(conversation_id=talk.id, role="user", content="What was the rule they agreed on?")
    return {"memory": memory, "medallion": medallion, "context": context, "conversation": talk}


def test_search_ranks_across_kinds_and_describes_message_hits(page: Any, corpus: Any):
    rules = _house_rule_corpus()
    page.goto(reverse("admin:winni_search") + "?q=UTC+timestamps")
    hits = page.locator(".winni-hit")
    kinds = hits.evaluate_all("nodes => nodes.map(n => n.dataset.kind)")
    # The memory, medallion and startup context that state the rule are all on the page, ahead of
    # the messages that only mention its words.
    for kind in ("memory", "medallion", "context"):
        assert kind in kinds[:6], kinds
    first_message = kinds.index("message")
    assert kinds.index("memory") < first_message or hits.nth(first_message).locator("mark").count() >= 2
    shot(page, "polish-08-search-across-kinds")

    message = page.locator('.winni-hit[data-kind="message"]').first
    assert message.locator(".winni-hit-title").inner_text() == "Why is the nightly export late again?"
    meta = message.locator(".winni-hit-meta").inner_text()
    assert "sess-shop-1" in meta and "shop" in meta and "Claude Code" in meta and "turn" in meta
    assert message.locator('[data-meta="date"]').inner_text().endswith("UTC")
    href = message.locator(".winni-hit-title").get_attribute("href")
    assert href.startswith(reverse("admin:conversations_conversation_transcript", args=[rules["conversation"].pk]))
    turn = href.rsplit("#turn-", 1)[1]
    message.locator(".winni-hit-title").click()
    page.wait_for_url(f"**#turn-{turn}")
    assert "focus" in page.locator(f"#turn-{turn}").get_attribute("class")

    # Per kind: the filter shows only that kind.
    page.goto(reverse("admin:winni_search") + "?q=UTC+timestamps")
    page.locator('.winni-kind-filter a[data-kind="memory"]').click()
    assert page.locator(".winni-hit").evaluate_all("nodes => nodes.map(n => n.dataset.kind)") == ["memory"]


def test_search_does_not_mark_stop_words(page: Any, corpus: Any):
    _house_rule_corpus()
    page.goto(reverse("admin:winni_search") + "?q=what+was+the+rule+they+agreed+on")
    marked = {text.lower() for text in page.locator(".winni-snippet mark").all_inner_texts()}
    assert marked and marked <= {"rule", "rules", "agreed"}, marked  # stems marked, stop words not


# --- medallion and context editors ----------------------------------------------------------------


def test_medallion_rows_validate_each_field_and_keep_the_raw_json(admin_page: Any):
    from medallions.models import Medallion

    page = admin_page
    page.goto(reverse("admin:medallions_medallion_add"))
    page.fill("#id_graph_nodes", "repo:shop")
    page.fill("#id_high_level", "The shop's conventions.")
    page.fill("[name=rows-decisions-0-statement]", "Store every timestamp in UTC.")
    page.fill("[name=rows-decisions-0-confidence]", "1.7")
    page.fill("[name=rows-open_questions-0-question]", "Do we keep local time in exports?")
    page.select_option("[name=rows-open_questions-0-priority]", "high")
    page.fill("[name=rows-invariants-0-text]", "Timestamps end in Z.")
    page.click("input[name=_save]")
    error = page.locator('[data-rows="decisions"] tr[data-row="0"] td.field-confidence .errorlist')
    assert "less than or equal to 1" in error.inner_text()
    assert page.locator('[data-rows="decisions"] td.field-statement .errorlist').count() == 0
    assert page.locator("[name=rows-decisions-0-statement]").input_value() == "Store every timestamp in UTC."
    shot(page, "polish-09-medallion-row-error")
    assert Medallion.objects.count() == 0

    page.fill("[name=rows-decisions-0-confidence]", "0.7")
    page.click("input[name=_save]")
    page.wait_for_url("**/medallions/medallion/")
    medallion = Medallion.objects.get()
    assert medallion.decisions == [{"id": "D-001", "statement": "Store every timestamp in UTC.", "rationale": "",
                                    "confidence": 0.7, "status": "active"}]
    assert medallion.open_questions == [{"id": "Q-001", "question": "Do we keep local time in exports?",
                                         "blocked_on": "", "priority": "high"}]
    assert medallion.affordances["invariants"] == ["Timestamps end in Z."]

    # The raw JSON stays, folded, for experts; a change there replaces the rows of its section.
    page.goto(reverse("admin:medallions_medallion_change", args=[medallion.pk]))
    assert not page.locator("#id_decisions").is_visible()
    page.locator("summary", has_text="Raw JSON").click()
    assert '"D-001"' in page.locator("#id_decisions").input_value()
    page.fill("#id_open_questions", "[]")
    page.click("input[name=_save]")
    page.wait_for_url("**/medallions/medallion/")
    assert Medallion.objects.get().open_questions == []


def test_the_history_button_shows_revisions_with_canonical_diffs(admin_page: Any):
    from medallions import services

    medallion = services.medallion_create(document={
        "scope": {"graph_nodes": ["repo:shop"], "tags": []},
        "summary": {"high_level": "Conventions.", "subsystems": []},
        "decisions": [{"id": "D-001", "statement": "Store timestamps in UTC.", "rationale": "one clock",
                       "confidence": 0.9, "status": "active"},
                      {"id": "D-002", "statement": "Money in cents.", "rationale": "", "confidence": 0.8,
                       "status": "active"}],
        "open_questions": [], "affordances": {"recommended_entry_points": [], "avoid_repeating": [], "invariants": []},
    }, actor="test")
    page = admin_page
    page.goto(reverse("admin:medallions_medallion_change", args=[medallion.pk]))
    page.fill("[name=rows-decisions-1-statement]", "Money in integer cents.")
    page.click("input[name=_save]")
    page.wait_for_url("**/medallions/medallion/")
    page.goto(reverse("admin:medallions_medallion_change", args=[medallion.pk]))
    page.click(".object-tools a.historylink")
    assert "doesn't have a change history" not in page.content()
    entry = page.locator(".winni-history-entry").first
    assert "revision 1" in entry.inner_text() and "admin:ada" in entry.inner_text()
    changed = [line for line in page.locator(".winni-diff .diff-add, .winni-diff .diff-del").all_inner_texts()
               if '"updated_at"' not in line]
    # Only the edited statement differs: no lines from keys stored in another order.
    assert changed == ['-      "statement": "Money in cents.",', '+      "statement": "Money in integer cents.",'], changed
    shot(page, "polish-10-medallion-history")


def test_the_history_button_of_a_startup_context_shows_its_audit(admin_page: Any):
    from contexts import services as contexts

    context = contexts.context_set(name="deploy-notes", content="Draft.", set_active=False, actor="test")
    contexts.context_activate(name="deploy-notes", actor="admin:ada")
    page = admin_page
    page.goto(reverse("admin:contexts_startupcontext_change", args=[context.pk]))
    page.click(".object-tools a.historylink")
    rows = page.locator(".winni-history-entry").all_inner_texts()
    assert len(rows) == 2 and "activate" in rows[0] and "admin:ada" in rows[0] and "test" in rows[1]
