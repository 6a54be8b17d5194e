"""The admin's own pages: the dashboard (the admin index) and the search page over every store.
Both behind `admin_view` (staff login, CSRF); each also checks the user's view permission for the
rows it shows. (The conversation transcript is the conversations app's admin page.)"""
from __future__ import annotations

import datetime as dt
import html
import re
from typing import Any

from django.contrib import admin
from django.db import connection
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe

from core import anchors, searchable
from winni_site import charts, dashboard

SEARCH_LIMIT = 20


def can_view(request: HttpRequest, model: type[Model] | None) -> bool:
    if model is None:
        return False
    opts = model._meta
    user = request.user
    return bool(user.has_perm(f"{opts.app_label}.view_{opts.model_name}")
                or user.has_perm(f"{opts.app_label}.change_{opts.model_name}"))


def changelist_url(model: type[Model]) -> str | None:
    try:
        return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    except NoReverseMatch:
        return None


# --- dashboard ------------------------------------------------------------------------------


def capture_by_project() -> list[dict[str, Any]]:
    """The dashboard's capture table: per project, the last captured event and today's count,
    most recent first (sessions without a project last)."""
    from agents.capture import capture_activity
    from core.models import Project

    activity = capture_activity()
    names = dict(Project.objects.filter(pk__in=[key for key in activity if key]).values_list("pk", "slug"))
    rows = [{"project": names.get(key, "—") if key else "(no project)", **row} for key, row in activity.items()]
    return sorted(rows, key=lambda row: (row["project"] == "(no project)",
                                         -(row["last_event_at"].timestamp() if row["last_event_at"] else 0)))


# The dashboard's capture panel lists the checkpoints that failed in the last days.
FAILURES_DAYS = 7


def dashboard_context(request: HttpRequest) -> dict[str, Any]:
    from conversations.models import Conversation, Message, source_title

    stores = []
    for title, model in dashboard.store_models():
        if model is None:
            stores.append({"title": title, "available": False})
        elif can_view(request, model):
            rows, query = dashboard.STORE_ROWS.get(title, (None, ""))
            count, exact = dashboard.row_count(model, rows)
            url = changelist_url(model)
            stores.append({"title": title, "available": True, "count": count, "exact": exact,
                           "url": f"{url}?{query}" if url and query else url})

    panels: dict[str, Any] = {}
    if can_view(request, Conversation) and can_view(request, Message):
        days = dashboard.messages_per_day(30)
        panels["messages_per_day"] = charts.bar_chart(
            [(day.strftime("%b %d"), n) for day, n in days], title="Messages per day (last 30 days, UTC)", width=1100,
            label_every=5)
        panels["sources"] = charts.hbar_chart(
            [(source_title(source), n) for source, n in dashboard.conversations_per_source()],
            title="Conversations per session source")
        recall = dashboard.recall_per_day(30)
        panels["injections_per_day"] = charts.bar_chart(
            [(day.strftime("%b %d"), n) for day, n, _ in recall],
            title="Automatic recall: blocks added per day (prompts and files)", width=1100, label_every=5)
        panels["recall_share"] = charts.line_chart(
            [(day.strftime("%b %d"), share) for day, _, share in recall],
            title="Share of captured prompts that received a block", width=1100, label_every=5, fmt=charts.percent)
        from agents import use as injection_use

        # Injections whose turn is over are judged here (once each; kept in core.models.ItemUse).
        injection_use.judge_pending()
        panels["item_use"] = injection_use.use_counts(days=30)
    if request.user.is_superuser:
        sizes = dashboard.table_sizes()
        panels["table_sizes"] = charts.hbar_chart(
            [(row["table"], row["bytes"]) for row in sizes], title="Database size per table",
            fmt=charts.human_bytes)
        panels["database_size"] = charts.human_bytes(dashboard.database_size())

    capture_rows: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    if can_view(request, Conversation) and can_view(request, Message):
        from agents.capture import checkpoint_failures

        capture_rows = capture_by_project()
        failures = [{**failure, "url": reverse("admin:medallions_medallionjob_change", args=[failure["job_id"]])}
                    for failure in checkpoint_failures(hours=FAILURES_DAYS * 24)]

    if request.user.is_superuser:
        panels["llm"] = dashboard.llm_today()

    cache_model = dashboard.find_model("librarian.QueryMemory")
    if cache_model is not None and can_view(request, cache_model):
        panels["hit_rate"] = charts.line_chart(
            [(day.strftime("%b %d"), rate) for day, rate in dashboard.cache_hit_rate_series(30)],
            title="Answer cache hit rate per day", width=1100, label_every=5, fmt=charts.percent)
        panels["tiers"] = charts.hbar_chart(dashboard.cache_tier_counts(), title="Cached answers per tier")

    return {
        "stores": stores,
        "panels": panels,
        "capture": capture_rows,
        "capture_failures": failures,
        "failures_days": FAILURES_DAYS,
        "cache_installed": cache_model is not None,
        "status": dashboard.system_status(),
        "search_url": reverse("admin:winni_search"),
    }


# --- search -----------------------------------------------------------------------------------


def search(request: HttpRequest) -> HttpResponse:
    """One box over every searchable store: one list ranked across kinds (core.recall_across.recall_by_kind),
    each hit linking to its row; `kind` narrows the list to one kind, `project` to a project's rows
    and the global memories and startup contexts (core.projects.search_scope), `project_only` to
    the project's rows alone."""
    from core.models import Project

    query = request.GET.get("q", "").strip()[:500]
    kinds = [kind for kind in searchable.kinds() if can_view(request, searchable.get(kind).model)]
    only = request.GET.get("kind", "")
    project = request.GET.get("project", "").strip()[:200]
    project_only = bool(project) and request.GET.get("project_only", "") in ("1", "on", "true")
    found: dict[str, Any] = {"hits": [], "per_kind": {}, "degraded": False}
    if query and kinds:
        found = search_hits(query, [only] if only in kinds else kinds, KIND_LIMIT if only in kinds else SEARCH_LIMIT,
                            project=project or None, project_only=project_only)
    scope = {name: value for name, value in (("project", project), ("project_only", "1" if project_only else ""))
             if value}
    context = {
        **admin.site.each_context(request),
        "title": "Search",
        "query": query,
        "hits": found["hits"],
        "hit_total": len(found["hits"]),
        "degraded": found["degraded"],
        "only": only if only in kinds else "",
        "only_title": _kind_title(only) if only in kinds else "",
        "kind_counts": [{"kind": kind, "title": _kind_title(kind), "count": found["per_kind"].get(kind, 0)}
                        for kind in kinds if found["per_kind"].get(kind)],
        "kinds": kinds,
        "kind_options": [{"kind": kind, "title": _kind_title(kind)} for kind in kinds],
        "kind_titles": [_kind_title(kind) for kind in kinds],
        "examples": search_examples(request) if not found["hits"] else [],
        "project": project,
        "project_only": project_only,
        "projects": list(Project.objects.order_by("slug").values_list("slug", flat=True)[:500]),
        "scope_query": "&" + urlencode(scope) if scope else "",
    }
    return TemplateResponse(request, "winni_admin/search.html", context)


KIND_LIMIT = 50


def _kind_title(kind: str, plural: bool = True) -> str:
    meta = searchable.get(kind).model._meta
    return str(meta.verbose_name_plural if plural else meta.verbose_name)


def search_examples(request: HttpRequest, count: int = 6) -> list[str]:
    """Words worth trying on this install: the most used memory tags (the user may view memories)."""
    memory_model = dashboard.find_model("memory.Memory")
    if memory_model is None or not can_view(request, memory_model):
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT tag FROM (SELECT tags FROM {memory_model._meta.db_table} ORDER BY created_at DESC LIMIT 2000) m,"
            " unnest(m.tags) AS tag GROUP BY tag ORDER BY count(*) DESC, tag LIMIT %s", [count])
        return [row[0] for row in cursor.fetchall()]


def search_hits(query: str, kinds: list[str], limit: int, *, project: str | None = None,
                project_only: bool = False) -> dict[str, Any]:
    """The page's hits: each with its kind, a title and link (a message: its conversation's first
    prompt, opening the transcript at the turn), what it belongs to (session, project, source,
    date) and a snippet with the query's words marked (not its stop words). `project`: its rows
    and the global memories and contexts, unless `project_only` (core.projects.search_scope)."""
    from conversations.admin import conversation_title, transcript_url
    from conversations.models import source_title
    from core.recall_across import recall_by_kind

    result = recall_by_kind(query=query, kinds=kinds, limit=limit, filters={"project": project},
                            project_only=project_only)
    words = _query_words(query)
    conversations = _conversations_of(result["results"])
    project_slugs = _projects_of(result["results"])
    stale = anchors.marks(f"{hit['kind']}:{hit['id']}" for hit in result["results"])
    hits = []
    for hit in result["results"]:
        model = searchable.get(hit["kind"]).model
        entry: dict[str, Any] = {
            "kind": hit["kind"], "kind_title": _kind_title(hit["kind"], plural=False), "id": hit["id"],
            "title": hit["label"], "url": _change_url(model, hit["id"]), "score": hit["strength"],
            "snippet": snippet(_readable(hit), words), "meta": [],
            "created_at": hit["created_at"] and dt.datetime.fromisoformat(hit["created_at"]),
            # The question this hit answers (core.recall.answers_first): shown under the answer.
            "asked": snippet(question["text"], words) if (question := hit.get("question")) else "",
        }
        conversation = conversations.get(hit.get("conversation_id") or "")
        if hit["kind"] == "message" and conversation is not None:
            entry["title"] = conversation_title(conversation)
            entry["url"] = transcript_url(conversation.pk, hit["turn"])
            entry["meta"] = [("turn", hit["label"].removeprefix("turn ")), ("session", conversation.session_id or "—"),
                             ("project", conversation.project.slug if conversation.project else "—"),
                             ("source", source_title(conversation.source))]
        elif project_slugs.get((hit["kind"], hit["id"])):
            entry["meta"] = [("project", project_slugs[(hit["kind"], hit["id"])])]
        marks = stale.get(f"{hit['kind']}:{hit['id']}", [])
        if marks:
            entry["meta"].append(("possibly stale", "; ".join(mark.text for mark in marks[:3])))
        hits.append(entry)
    return {"hits": hits, "per_kind": result["per_kind"], "degraded": result["degraded"]}


def _readable(hit: Any) -> str:
    """A hit's text as the page shows it: a tool call as its one readable line (recall's snippet,
    conversations.toolcalls), never its stored JSON; the row's own page keeps the JSON."""
    from conversations.toolcalls import tool_line

    if hit["kind"] == "message" and tool_line(hit["text"]) is not None:
        return str(hit["snippet"])
    return str(hit["text"])


def _conversations_of(results: list[Any]) -> dict[str, Any]:
    from conversations.models import Conversation

    ids = {hit["conversation_id"] for hit in results if hit["kind"] == "message" and hit.get("conversation_id")}
    if not ids:
        return {}
    return {str(c.pk): c for c in Conversation.objects.filter(pk__in=ids).select_related("project")}


def _projects_of(results: list[Any]) -> dict[tuple[str, str], str]:
    """(kind, id) → project slug for the hits other than messages: one query per kind."""
    keys: dict[str, list[str]] = {}
    for hit in results:
        if hit["kind"] != "message":
            keys.setdefault(hit["kind"], []).append(hit["id"])
    slugs: dict[tuple[str, str], str] = {}
    for kind, ids in keys.items():
        model = searchable.get(kind).model
        if not any(field.name == "project" for field in model._meta.get_fields()):
            continue
        for pk, slug in model._default_manager.filter(pk__in=ids, project__isnull=False).values_list(
                "pk", "project__slug"):
            slugs[(kind, str(pk))] = slug
    return slugs


def _change_url(model: type[Model], pk: Any) -> str | None:
    try:
        return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[pk])
    except NoReverseMatch:
        return None


def _query_words(query: str) -> list[str]:
    """The words of the query worth marking: not the search syntax ("or"), not English stop words
    ("the", "was": PostgreSQL's english configuration drops them from the index too)."""
    words = list(dict.fromkeys(word for word in re.findall(r"\w+", query.lower()) if word not in {"or", "and", "not"}))
    if not words:
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT w FROM unnest(%s::text[]) AS w WHERE to_tsvector('english', w) <> ''::tsvector",
                       [words])
        kept = {row[0] for row in cursor.fetchall()}
    return [word for word in words if word in kept]


def snippet(text: str, words: list[str], width: int = 240) -> SafeString:
    """A window of `text` around the first query word, HTML-escaped, query words in <mark>."""
    if not words:
        return mark_safe(html.escape(text[:width]))
    # Match word prefixes: the index stems ("deploying" finds "deploy"), so show those too.
    stems = sorted({word[:max(4, len(word) - 3)] if len(word) > 4 else word for word in words}, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(re.escape(stem) for stem in stems) + r")\w*", re.IGNORECASE)
    match = pattern.search(text)
    start = 0 if match is None else max(0, match.start() - width // 3)
    window = text[start:start + width]
    parts, last = [], 0
    for found in pattern.finditer(window):
        parts.append(html.escape(window[last:found.start()]))
        parts.append(f"<mark>{html.escape(found.group(0))}</mark>")
        last = found.end()
    parts.append(html.escape(window[last:]))
    prefix = "… " if start > 0 else ""
    suffix = " …" if start + width < len(text) else ""
    return mark_safe(prefix + "".join(parts) + suffix)
