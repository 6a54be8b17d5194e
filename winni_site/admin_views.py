"""The admin's own pages: the dashboard (the admin index), the search page over every store, and
the conversation transcript. All behind `admin_view` (staff login, CSRF); each also checks the
user's view permission for the rows it shows."""
from __future__ import annotations

import html
import re
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Model
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, URLPattern, path, reverse
from django.utils.safestring import SafeString, mark_safe

from winni_site import charts, dashboard, searchable

TRANSCRIPT_PAGE_SIZE = 200
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


def transcript_url(conversation_id: Any, turn: int | None = None) -> str:
    url = reverse("admin:conversations_conversation_transcript", args=[conversation_id])
    return url if turn is None else f"{url}?turn={turn}#turn-{turn}"


# --- dashboard ------------------------------------------------------------------------------


def dashboard_context(request: HttpRequest) -> dict[str, Any]:
    from conversations.models import Conversation, Message

    stores = []
    for title, model in dashboard.store_models():
        if model is None:
            stores.append({"title": title, "available": False})
        elif can_view(request, model):
            count, exact = dashboard.row_count(model)
            stores.append({"title": title, "available": True, "count": count, "exact": exact,
                           "url": changelist_url(model)})

    panels: dict[str, Any] = {}
    if can_view(request, Conversation) and can_view(request, Message):
        days = dashboard.messages_per_day(30)
        panels["messages_per_day"] = charts.bar_chart(
            [(day.strftime("%b %d"), n) for day, n in days], title="Messages per day (last 30 days, UTC)", width=1100,
            label_every=5)
        panels["sources"] = charts.hbar_chart(
            [(_source_title(source), n) for source, n in dashboard.conversations_per_source()],
            title="Conversations per session source")
    if request.user.is_superuser:
        sizes = dashboard.table_sizes()
        panels["table_sizes"] = charts.hbar_chart(
            [(row["table"], row["bytes"]) for row in sizes], title="Database size per table",
            width=520, fmt=charts.human_bytes)
        panels["database_size"] = charts.human_bytes(dashboard.database_size())

    cache_model = dashboard.find_model("memory.QueryMemory")
    cache_visible = cache_model is None or can_view(request, cache_model)
    series = dashboard.cache_hit_rate_series(30) if cache_visible else None
    if series is not None:
        panels["hit_rate"] = charts.line_chart(
            [(day.strftime("%b %d"), rate) for day, rate in series],
            title="Answer cache hit rate per day", width=1100, label_every=5, fmt=charts.percent)
    tiers = dashboard.cache_tier_counts() if cache_visible else None
    if tiers is not None:
        panels["tiers"] = charts.hbar_chart(tiers, title="Cached answers per tier")

    return {
        "stores": stores,
        "panels": panels,
        "cache_installed": cache_model is not None or dashboard.librarian() is not None,
        "status": dashboard.system_status(),
        "search_url": reverse("admin:winni_search"),
    }


def _source_title(source: str) -> str:
    return {"claude-code": "Claude Code", "api": "API", "proxy": "MCP proxy"}.get(source, source)


# --- search -----------------------------------------------------------------------------------


def search(request: HttpRequest) -> HttpResponse:
    """One box over every searchable store; results grouped by kind, each linking to its row."""
    query = request.GET.get("q", "").strip()[:500]
    groups: list[dict[str, Any]] = []
    if query:
        groups = search_groups(request, query, SEARCH_LIMIT)
    context = {
        **admin.site.each_context(request),
        "title": "Search",
        "query": query,
        "groups": groups,
        "hit_total": sum(len(group["hits"]) for group in groups),
        "kinds": [kind for kind in searchable.kinds() if can_view(request, searchable.get(kind).model)],
    }
    return TemplateResponse(request, "winni_admin/search.html", context)


def search_groups(request: HttpRequest, query: str, limit: int) -> list[dict[str, Any]]:
    """winni_recall's hybrid ranking over the kinds the user may view, grouped by kind (best
    group first); each hit links to its row (a message to its turn in the transcript)."""
    from winni_site.recall import recall

    kinds = [kind for kind in searchable.kinds() if can_view(request, searchable.get(kind).model)]
    if not kinds:
        return []
    words = _query_words(query)
    result = recall(query=query, kinds=kinds, limit=limit)
    groups: dict[str, dict[str, Any]] = {}
    for hit in result["results"]:
        model = searchable.get(hit["kind"]).model
        if hit["kind"] == "message" and hit["conversation_id"]:
            url: str | None = transcript_url(hit["conversation_id"], hit["turn"])
        else:
            url = _change_url(model, hit["id"])
        group = groups.setdefault(hit["kind"], {
            "kind": hit["kind"], "title": str(model._meta.verbose_name_plural).capitalize(), "hits": [],
            "best": hit["score"]})
        group["hits"].append({"kind": hit["kind"], "id": hit["id"], "title": hit["label"], "score": hit["score"],
                              "snippet": snippet(hit["text"], words), "url": url})
    return sorted(groups.values(), key=lambda group: -group["best"])


def _change_url(model: type[Model], pk: Any) -> str | None:
    try:
        return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[pk])
    except NoReverseMatch:
        return None


def _query_words(query: str) -> list[str]:
    return [word for word in re.findall(r"\w+", query.lower()) if word not in {"or", "and", "not"}]


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


# --- conversation transcript ----------------------------------------------------------------


class TranscriptAdminMixin:
    """Adds the transcript page to the Conversation admin (…/<id>/transcript/) and a link to it
    in the list. The transcript is the readable view; the change form stays the raw one."""

    def get_urls(self) -> list[URLPattern]:
        urls = super().get_urls()  # type: ignore[misc]
        transcript = path("<path:object_id>/transcript/", self.admin_site.admin_view(self.transcript_view),  # type: ignore[attr-defined]
                          name="conversations_conversation_transcript")
        return [transcript, *urls]

    def get_list_display(self, request: HttpRequest) -> Any:
        columns = tuple(super().get_list_display(request))  # type: ignore[misc]
        return columns if "transcript_link" in columns else (*columns, "transcript_link")

    @admin.display(description="transcript")
    def transcript_link(self, obj: Model) -> SafeString:
        return mark_safe(f'<a href="{html.escape(transcript_url(obj.pk))}">read</a>')

    def transcript_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        from conversations.models import Conversation
        from conversations.services import parse_uuid
        from winni_site.errors import InvalidInput

        try:
            conversation_id = parse_uuid(object_id, field="conversation_id")
        except InvalidInput:
            raise Http404("no such conversation") from None
        conversation = get_object_or_404(Conversation, pk=conversation_id)
        if not self.has_view_or_change_permission(request, conversation):  # type: ignore[attr-defined]
            raise PermissionDenied
        return transcript_response(request, conversation, self)


def transcript_response(request: HttpRequest, conversation: Any, model_admin: Any) -> HttpResponse:
    messages = conversation.messages.order_by("turn_number")
    paginator = Paginator(messages, TRANSCRIPT_PAGE_SIZE)
    turn = request.GET.get("turn", "")
    if turn.isdigit():
        # Open the page that holds this turn, so a search hit's #turn-N anchor is on the page.
        before = messages.filter(turn_number__lt=int(turn)).count()
        page_number: Any = before // TRANSCRIPT_PAGE_SIZE + 1
    else:
        page_number = request.GET.get("page", 1)
    page = paginator.get_page(page_number)
    metadata = conversation.metadata or {}
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"Transcript: {conversation.session_id or conversation.pk}",
        "opts": model_admin.model._meta,
        "conversation": conversation,
        "source": _source_title(str(metadata.get("source") or dashboard.DEFAULT_SOURCE).lower()),
        "page": page,
        "message_count": paginator.count,
        "focus_turn": int(turn) if turn.isdigit() else None,
        "change_url": reverse("admin:conversations_conversation_change", args=[conversation.pk]),
        "has_view_permission": True,
    }
    return TemplateResponse(request, "winni_admin/transcript.html", context)
