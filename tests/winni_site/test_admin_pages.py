"""The admin's own pages through Django's test client: dashboard, search, transcript, permission
checks, and lists that do not COUNT(*) big tables."""
from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from conversations.models import Conversation
from tests.admin_data import LONG_TURNS, AdminCorpus, build_admin_corpus, build_cache_activity


@pytest.fixture
def corpus(db: Any) -> AdminCorpus:
    return build_admin_corpus()


@pytest.fixture
def admin_client(client: Any, staff_user: Any) -> Any:
    from django.core.cache import cache

    cache.clear()  # the dashboard's status panel is cached for a few seconds
    client.force_login(staff_user)
    return client


def marks(html: str, chart_title: str) -> dict[str, str]:
    """data-label → data-value of the marks drawn in one chart."""
    start = html.index(f'data-chart="{chart_title}"')
    end = html.index("</figure>", start)
    return dict(re.findall(r'data-label="([^"]*)" data-value="([^"]*)"', html[start:end]))


def test_dashboard_counts_each_store_and_draws_charts_from_the_data(admin_client: Any, corpus: AdminCorpus):
    response = admin_client.get("/admin/")
    assert response.status_code == 200
    html = response.content.decode()

    # Store tiles: exact counts for small tables; stores not installed say so instead of zero.
    assert re.search(r'data-store="Conversations".*?data-count="4"', html, re.S)
    assert re.search(r'data-store="Messages".*?data-count="%d"' % (4 + 2 + 3 + LONG_TURNS), html, re.S)
    for title, store in [(s["title"], s) for s in response.context["stores"]]:
        if not store["available"]:
            assert re.search(rf'data-store="{title}".*?not available', html, re.S)

    per_day = marks(html, "Messages per day (last 30 days, UTC)")
    assert len(per_day) == 30
    for day, count in corpus.per_day.items():
        assert per_day[day.strftime("%b %d")] == str(count)
    assert sum(int(v) for v in per_day.values()) == sum(corpus.per_day.values())

    assert marks(html, "Conversations per session source") == {"Claude Code": "2", "API": "1", "MCP proxy": "1"}

    sizes = marks(html, "Database size per table")
    assert int(sizes["conversations_message"]) > 0
    assert "Workers and queue" in html and 'data-queue="' in html


def test_dashboard_charts_the_answer_cache(admin_client: Any, corpus: AdminCorpus):
    from memory.librarian.models import QueryMemory

    cache = build_cache_activity()
    assert cache["asks"] == 5 and 0 < cache["hit_rate"] < 1
    html = admin_client.get("/admin/").content.decode()
    hit_rate = marks(html, "Answer cache hit rate per day")
    today = timezone.now().date().strftime("%b %d")
    assert hit_rate == {today: str(cache["hit_rate"])}  # days without asks are gaps, not zeros
    tiers = marks(html, "Cached answers per tier")
    assert list(tiers) == ["cold", "warm", "hot", "core"]
    for tier, count in tiers.items():
        assert int(count) == QueryMemory.objects.filter(tier=tier, answer__isnull=False).count()
    # Only answered entries are cached answers (the unanswered question is not), as on the cache page.
    assert sum(int(count) for count in tiers.values()) == 1


def test_dashboard_heartbeat_shows_the_worker(admin_client: Any, corpus: AdminCorpus):
    from core import health

    health.heartbeat_record()
    html = admin_client.get("/admin/").content.decode()
    assert 'data-worker="ok"' in html


def test_anonymous_and_non_staff_users_see_nothing(client: Any, corpus: AdminCorpus):
    pages = ["/admin/", "/admin/search/?q=kubernetes",
             reverse("admin:conversations_conversation_transcript", args=[corpus.claude.id])]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], url
    user = get_user_model().objects.create_user("eve", password="pw-eve-123")  # active, not staff
    client.force_login(user)
    for url in pages:
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"], url
        assert b"kubernetes" not in response.content


def test_staff_without_permissions_gets_no_rows(client: Any, corpus: AdminCorpus):
    user = get_user_model().objects.create_user("sam", password="pw-sam-123", is_staff=True)
    client.force_login(user)
    html = client.get("/admin/").content.decode()
    assert 'data-store="Conversations"' not in html
    assert "Messages per day" not in html and "Database size per table" not in html
    assert client.get("/admin/search/?q=kubernetes").context["hits"] == []
    transcript = reverse("admin:conversations_conversation_transcript", args=[corpus.claude.id])
    assert client.get(transcript).status_code == 403

    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_conversation", "view_message"]))
    client.force_login(get_user_model().objects.get(pk=user.pk))
    assert client.get(transcript).status_code == 200
    assert 'data-store="Conversations"' in client.get("/admin/").content.decode()


def test_transcript_shows_roles_anchors_folded_tools_and_metadata(admin_client: Any, corpus: AdminCorpus):
    url = reverse("admin:conversations_conversation_transcript", args=[corpus.claude.id])
    html = admin_client.get(url).content.decode()
    roles = re.findall(r'id="turn-(\d+)" class="winni-turn role-(\w+)', html)
    assert roles == [("1", "system"), ("2", "user"), ("3", "tool"), ("4", "assistant")]
    # The tool output is folded under its tool name; metadata is behind a <details>.
    assert re.search(r'<details class="winni-tool"><summary><span class="winni-tool-name">Bash</span> '
                     r'<span class="winni-quiet">— \d+ characters</span></summary>', html)
    assert "Conversation metadata" in html and "/src/winni" in html
    assert "Claude Code" in html and "sess-claude-1" in html


def test_transcript_opens_the_page_holding_the_requested_turn(admin_client: Any, corpus: AdminCorpus):
    url = reverse("admin:conversations_conversation_transcript", args=[corpus.long.id])
    first = admin_client.get(url).content.decode()
    assert 'id="turn-1"' in first and 'id="turn-200"' in first and 'id="turn-201"' not in first
    focused = admin_client.get(url + "?turn=250").content.decode()
    assert 'id="turn-250" class="winni-turn role-assistant focus"' in focused
    assert 'id="turn-1"' not in focused and f"of {LONG_TURNS}" in focused


def test_transcript_of_a_missing_or_malformed_conversation_is_404(admin_client: Any, corpus: AdminCorpus):
    import uuid

    assert admin_client.get(reverse("admin:conversations_conversation_transcript", args=[uuid.uuid4()])).status_code == 404
    assert admin_client.get("/admin/conversations/conversation/not-a-uuid/transcript/").status_code == 404


def test_search_ranks_hits_across_kinds_and_links_messages_to_their_turn(admin_client: Any, corpus: AdminCorpus):
    response = admin_client.get("/admin/search/", {"q": "flamingo checksum"})
    hit = response.context["hits"][0]  # the best hit (weaker semantic neighbours may follow)
    assert hit["kind"] == "message"
    transcript = reverse("admin:conversations_conversation_transcript", args=[corpus.long.id])
    assert hit["url"] == f"{transcript}?turn=250#turn-250"
    assert "<mark>flamingo</mark>" in hit["snippet"]
    assert hit["url"].replace("&", "&amp;") in response.content.decode()
    # The link lands on the page that holds the turn.
    assert 'id="turn-250"' in admin_client.get(hit["url"]).content.decode()


def test_search_ranks_stemmed_matches_and_escapes_text(admin_client: Any, corpus: AdminCorpus):
    from conversations import services as conv

    conv.message_store(conversation_id=corpus.api.id, role="user", content="<script>alert(1)</script> deploying now")
    response = admin_client.get("/admin/search/", {"q": "deploy"})
    hits = response.context["hits"]
    # Stemmed: "deployment" (system), "deploy" (user) and "deploying" (the new message) are found;
    # a question shows under its answer (core.recall.answers_first), marked there.
    found = [hit["snippet"] for hit in hits if "<mark>" in hit["snippet"] + hit["asked"]]
    assert len(found) == 3
    html = response.content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html


def test_search_without_a_query_or_hits_writes_nothing_and_says_so(admin_client: Any, corpus: AdminCorpus):
    before = Conversation.objects.count()
    assert admin_client.get("/admin/search/").context["hits"] == []
    assert "Nothing found." in admin_client.get("/admin/search/", {"q": "zzzyxq"}).content.decode()
    assert Conversation.objects.count() == before


def test_search_keeps_a_row_holding_a_word_every_turn_has(admin_client: Any, db: Any, monkeypatch: Any):
    """A query word in every past turn weighs nothing (ANALYZE's statistics say so after a test
    stored many turns with it), yet a row holding it holds a word of the query: it is not dropped
    as a row that only sits near a match."""
    from conversations import services as conv_services
    from core import recall_across

    chat = conv_services.conversation_begin(session_id="sess-common")
    asked = conv_services.message_store(conversation_id=chat.id, role="user", content="What did we decide about invoices?")
    monkeypatch.setattr(recall_across, "_lexeme_weights", lambda lexemes: dict.fromkeys(lexemes, 0.0))
    hits = admin_client.get("/admin/search/", {"q": "invoices decision"}).context["hits"]
    assert str(asked.pk) in {hit["id"] for hit in hits}


def test_search_weighs_a_tool_call_by_the_line_it_shows(admin_client: Any, db: Any):
    """A tool call is stored as JSON: `tool_name` gave every call the query's "name", `file_path` its
    "file", and a long call held most words of any query. The page counts the words of the line it
    shows, as automatic recall's gate does, so the turn that states the answer ranks above it."""
    import json

    from conversations import services as conv_services

    chat = conv_services.conversation_begin(session_id="sess-names", metadata={"cwd": "/work/shop"})
    call = conv_services.message_store(conversation_id=chat.id, role="tool", content=json.dumps({
        "tool_name": "Bash", "tool_input": {"command": "pytest -q", "description": "check the names"},
        "tool_response": {"stdout": "3 failed, 41 passed", "stderr": ""}}))
    stated = conv_services.message_store(conversation_id=chat.id, role="assistant",
                                         content="Feature flag names are kebab-case, like billing-new-checkout.")
    from core.recall_across import recall_by_kind

    ranked = {hit["id"]: hit for hit in recall_by_kind(query="feature flag name")["results"]}
    assert ranked[str(stated.pk)]["coverage"] == 1.0
    # "name" was its key's, and its description's "names" is not in the line the page shows.
    assert str(call.pk) not in ranked or ranked[str(call.pk)]["coverage"] == 0.0
    hits = admin_client.get("/admin/search/", {"q": "feature flag name"}).context["hits"]
    assert hits[0]["id"] == str(stated.pk)


def test_search_filters_by_project_and_kind(admin_client: Any, corpus: AdminCorpus):
    """"What did we decide about X in project Y" is one search: the project and kind filters."""
    from conversations import services as conv_services
    from core import projects
    from memory import services as memories

    for name in ("billing", "web"):
        projects.project_create(name=name)
    memories.memory_store(content="Decision: invoices are rounded per line, never per total.", project="billing")
    memories.memory_store(content="Decision: invoices render in the browser, never as PDF.", project="web")
    web = conv_services.conversation_begin(session_id="sess-web", project="web")
    conv_services.message_store(conversation_id=web.id, role="user", content="What did we decide about invoices?")

    everywhere = admin_client.get("/admin/search/", {"q": "invoices decision"}).context["hits"]
    assert {hit["kind"] for hit in everywhere} >= {"memory", "message"}
    response = admin_client.get("/admin/search/", {"q": "invoices decision", "project": "billing", "kind": "memory"})
    hits = response.context["hits"]
    assert [hit["snippet"].replace("<mark>", "").replace("</mark>", "") for hit in hits] == [
        "Decision: invoices are rounded per line, never per total."]
    html = response.content.decode()
    assert '<option value="billing" selected>billing</option>' in html
    assert '<option value="memory" selected>' in html and "in project billing" in html
    in_web = admin_client.get("/admin/search/", {"q": "invoices decision", "project": "web"}).context["hits"]
    assert in_web and {dict(hit["meta"]).get("project") for hit in in_web} == {"web"}
    # An unknown project finds nothing, as recall's `project` filter does (docs/projects.md).
    unknown = admin_client.get("/admin/search/", {"q": "invoices decision", "project": "nope"})
    assert unknown.context["project"] == "nope" and unknown.context["hits"] == []


def test_an_app_with_one_list_opens_that_list(admin_client: Any, corpus: AdminCorpus):
    response = admin_client.get("/admin/librarian/")
    assert response.status_code == 302 and response["Location"] == "/admin/librarian/querymemory/"
    assert admin_client.get("/admin/conversations/").status_code == 200  # several lists: the app's page


def test_the_cache_page_counts_questions_and_cached_answers_apart(admin_client: Any, corpus: AdminCorpus):
    """Issue #47.8: "Tiers: cold 2, warm 1" beside "1 cached answers" and "3 answer cache". Rows are
    questions asked; the tiers count cached answers, as the dashboard does; both are labelled."""
    from memory.librarian.models import QueryMemory

    build_cache_activity()
    questions = QueryMemory.objects.count()
    answered = QueryMemory.objects.filter(answer__isnull=False).count()
    assert questions > answered >= 1
    html = admin_client.get("/admin/librarian/querymemory/").content.decode()
    stats = html[html.index('id="cache-stats"'):html.index('id="changelist"')]
    assert "Cached answers per tier" in stats
    tier_counts = [int(n) for n in re.findall(r"<td>(\d+)</td></tr>", stats)]
    assert sum(tier_counts) == answered
    assert f"{answered} cached answer{'s' if answered != 1 else ''} (at most" in stats
    assert f"{questions} questions asked, {questions - answered} without an answer" in stats
    assert re.search(rf"\b{questions} questions\s*</p>", html)  # the list's own count, not "N answer cache"
    assert "answer cache\n" not in html.split('class="paginator"')[1]
    filtered = admin_client.get("/admin/librarian/querymemory/?answer__isempty=0").content.decode()
    assert re.search(rf"\b{answered} question{'s' if answered != 1 else ''}\s*</p>", filtered)


def test_large_lists_use_the_estimate_instead_of_count(admin_client: Any, corpus: AdminCorpus, settings: Any):
    settings.WINNI_ADMIN_EXACT_COUNT_BELOW = 3
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_conversation")
    from conversations import services as conv

    conv.conversation_begin(session_id="after-analyze")  # the estimate stays 4, an exact count is 5
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(reverse("admin:conversations_conversation_changelist"))
    assert response.status_code == 200
    # Django's paginator counts with SELECT COUNT(*) AS "__count" FROM …; none may run here.
    counts = [q["sql"] for q in queries.captured_queries if '"__count"' in q["sql"]]
    assert counts == []
    assert response.context["cl"].result_count == 4  # reltuples as of the ANALYZE
    # A filtered list is counted exactly.
    response = admin_client.get(reverse("admin:conversations_conversation_changelist"), {"q": "sess-proxy"})
    assert response.context["cl"].result_count == 1


def test_dashboard_uses_estimates_for_big_tables(admin_client: Any, corpus: AdminCorpus, settings: Any):
    settings.WINNI_ADMIN_EXACT_COUNT_BELOW = 3
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_message")
    html = admin_client.get("/admin/").content.decode()
    assert re.search(r'data-store="Messages".*?≈ \d+', html, re.S)


def test_the_record_view_links_to_the_transcript(admin_client: Any, corpus: AdminCorpus):
    html = admin_client.get(reverse("admin:conversations_conversation_change", args=[corpus.claude.id])).content.decode()
    assert reverse("admin:conversations_conversation_transcript", args=[corpus.claude.id]) in html


def test_admin_posts_need_the_csrf_token(staff_user: Any, corpus: AdminCorpus):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    changelist = reverse("admin:conversations_conversation_changelist")
    response = client.post(changelist, {"action": "delete_selected", "_selected_action": [str(corpus.api.id)],
                                        "post": "yes"})
    assert response.status_code == 403
    assert Conversation.objects.filter(pk=corpus.api.id).exists()
    # Every form the admin's own pages render carries the token (the search box is a GET form).
    html = client.get(changelist).content.decode()
    assert html.count('<form') == html.count('method="get"') + html.count('name="csrfmiddlewaretoken"')
