"""Admin lists for conversations and orchestration results, and a conversation's transcript page.
Deletions go through the services (the same code path as the API)."""
import html
from typing import Any, Callable

from django.contrib import admin
from django.contrib.postgres.search import SearchQuery
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from conversations import services
from conversations.models import DEFAULT_SOURCE, Conversation, FiedlerResult, Message, SessionDigest, source_title
from conversations.transcript import tool_call_names, tool_turn
from core.errors import InvalidInput
from core.validation import parse_uuid

TRANSCRIPT_PAGE_SIZE = 200
# Notes other parts of Winni attach to a transcript's messages, filled from outside this app (the
# site registers what automatic recall added to each prompt): each function gets a page's messages
# and returns {message id: [{"title": str, "text": str}]}, shown folded under the message.
TRANSCRIPT_NOTES: list[Callable[[list[Message]], dict[Any, list[dict[str, str]]]]] = []


def transcript_url(conversation_id: Any, turn: int | None = None) -> str:
    url = reverse("admin:conversations_conversation_transcript", args=[conversation_id])
    return url if turn is None else f"{url}?turn={turn}#turn-{turn}"


TITLE_LIST_CHARS = 90


def conversation_title(conversation: Conversation, limit: int = TITLE_LIST_CHARS) -> str:
    """The first user prompt, trimmed; without one the session id (or what the source says)."""
    title = conversation.title or ""
    if title:
        return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"
    return f"({source_title(conversation.source)} session {conversation.session_id or conversation.pk})"


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
    rows = list(page.object_list)
    names = tool_call_names(rows)
    for message in rows:
        message.tool = tool_turn(message, names, cwd=metadata.get("cwd")) if message.role == "tool" else None
    for notes_of in TRANSCRIPT_NOTES:
        for message_id, notes in notes_of(rows).items():
            for message in rows:
                if message.pk == message_id:
                    message.winni_notes = [*getattr(message, "winni_notes", []), *notes]
    page.object_list = rows
    context = {
        **model_admin.admin_site.each_context(request),
        "title": conversation_title(conversation, limit=120),
        "opts": model_admin.model._meta,
        "conversation": conversation,
        "source": source_title(str(metadata.get("source") or DEFAULT_SOURCE).lower()),
        "page": page,
        "rows": rows,
        "message_count": paginator.count,
        "focus_turn": int(turn) if turn.isdigit() else None,
        "change_url": reverse("admin:conversations_conversation_change", args=[conversation.pk]),
        "has_view_permission": True,
        # The session's digest (conversations.services.digest), shown above its transcript.
        "digest": SessionDigest.objects.filter(conversation=conversation).first(),
    }
    return TemplateResponse(request, "winni_admin/transcript.html", context)


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("turn_number", "role", "content", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("turn_number",)
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


def _per_conversation(aggregate: Any, output_field: Any) -> Subquery:
    """A correlated aggregate over one conversation's messages, evaluated only for the rows of the
    page (a GROUP BY join would aggregate every message before paging)."""
    rows = Message.objects.filter(conversation=OuterRef("pk")).order_by().values("conversation")
    return Subquery(rows.annotate(value=aggregate).values("value"), output_field=output_field)


class SourceFilter(admin.SimpleListFilter):
    """Which agent or interface the conversation came from (metadata.source; none: the API)."""

    title = "source"
    parameter_name = "source"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        from django.db.models.fields.json import KT

        found = Conversation.objects.values_list(KT("metadata__source"), flat=True).distinct().order_by()
        sources = sorted({str(s or DEFAULT_SOURCE).strip().lower() or DEFAULT_SOURCE for s in found})
        return [(source, source_title(source)) for source in sources]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> QuerySet[Conversation]:
        value = self.value()
        if not value:
            return queryset
        if value == DEFAULT_SOURCE:
            return queryset.filter(Q(metadata__source__iexact=value) | ~Q(metadata__has_key="source")
                                   | Q(metadata__isnull=True))
        return queryset.filter(metadata__source__iexact=value)


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    """One row per conversation: its first prompt (opening the transcript), project, source,
    messages, and first and last activity from its messages; the latest activity first."""

    list_display = ("conversation", "project", "source", "message_count", "first_activity", "last_activity")
    list_display_links = None
    list_filter = ("project", SourceFilter)
    list_select_related = ("project",)
    search_fields = ("session_id",)
    search_help_text = "Session id, first prompt, or words from the messages (web-search syntax)."
    readonly_fields = ("id", "session_id", "title", "project", "metadata", "first_message_at", "last_message_at",
                       "created_at", "updated_at")
    # Stored columns (kept by the message services), so paging needs no aggregate over messages.
    ordering = (F("last_message_at").desc(nulls_last=True), "-created_at")
    inlines = [MessageInline]
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        return super().get_queryset(request).annotate(
            _message_count=Coalesce(_per_conversation(Count("*"), IntegerField()), 0))

    @admin.display(ordering="title", description="conversation")
    def conversation(self, obj: Conversation) -> SafeString:
        return mark_safe(f'<a href="{html.escape(transcript_url(obj.pk))}" title="{html.escape(obj.session_id or "")}">'
                         f'{html.escape(conversation_title(obj))}</a>')

    @admin.display(description="source")
    def source(self, obj: Conversation) -> str:
        return source_title(obj.source)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Conversation], search_term: str
    ) -> tuple[QuerySet[Conversation], bool]:
        """Session ids as usual, plus conversations with a message matching the words (FTS)."""
        term = search_term.strip()
        if not term:
            return queryset, False
        matching = Message.objects.filter(
            search_vector=SearchQuery(term, config="english", search_type="websearch")
        ).values("conversation_id")
        return queryset.filter(Q(session_id__icontains=term) | Q(title__icontains=term) | Q(pk__in=matching)), False

    @admin.display(ordering="_message_count", description="messages")
    def message_count(self, obj: Conversation) -> int:
        return obj._message_count  # type: ignore[attr-defined]  # annotated by get_queryset

    @admin.display(ordering="first_message_at", description="first activity")
    def first_activity(self, obj: Conversation) -> Any:
        return obj.first_message_at

    @admin.display(ordering=F("last_message_at").desc(nulls_last=True), description="last activity")
    def last_activity(self, obj: Conversation) -> Any:
        return obj.last_message_at

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # read-only (messages come through capture and the API): no Save buttons

    def delete_model(self, request: HttpRequest, obj: Conversation) -> None:
        services.conversation_delete(conversation_id=obj.pk, force=True)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
        for pk in queryset.values_list("pk", flat=True):
            services.conversation_delete(conversation_id=pk, force=True)

    # The transcript: the readable view of a conversation (…/<id>/transcript/); the change form stays
    # the raw one.

    def get_urls(self) -> list[URLPattern]:
        urls = super().get_urls()
        transcript = path("<path:object_id>/transcript/", self.admin_site.admin_view(self.transcript_view),
                          name="conversations_conversation_transcript")
        return [transcript, *urls]

    def transcript_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        try:
            conversation_id = parse_uuid(object_id, field="conversation_id")
        except InvalidInput:
            raise Http404("no such conversation") from None
        conversation = get_object_or_404(Conversation, pk=conversation_id)
        if not self.has_view_or_change_permission(request, conversation):
            raise PermissionDenied
        return transcript_response(request, conversation, self)


@admin.register(FiedlerResult)
class FiedlerResultAdmin(admin.ModelAdmin):
    list_display = (
        "correlation_id", "model", "status", "tokens_prompt", "tokens_completion", "duration_seconds", "created_at",
    )
    list_filter = ("conversation__project", "model", "status", "created_at")
    date_hierarchy = "created_at"
    search_fields = ("correlation_id",)
    raw_id_fields = ("conversation",)
    readonly_fields = (
        "id", "correlation_id", "model", "prompt", "output", "tokens_prompt", "tokens_completion",
        "duration_seconds", "status", "error_message", "metadata", "conversation", "created_at",
    )
    ordering = ("-created_at",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # read-only: no Save buttons

    def delete_model(self, request: HttpRequest, obj: FiedlerResult) -> None:
        services.fiedler_result_delete(result=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[FiedlerResult]) -> None:
        for result in queryset:
            services.fiedler_result_delete(result=result)


@admin.register(SessionDigest)
class SessionDigestAdmin(admin.ModelAdmin):
    """Read-only: digests are written when their session ends or compacts; each links to its
    transcript, which shows the digest above the turns."""

    list_display = ("__str__", "project", "trigger", "writer", "messages_seen", "started_at", "updated_at", "transcript")
    list_filter = ("project", "trigger", "writer")
    list_select_related = ("project",)
    search_fields = ("session_id", "text")
    readonly_fields = ("id", "conversation", "project", "session_id", "text", "sections", "writer", "writer_note",
                       "awaiting_model", "trigger",
                       "messages_seen", "started_at", "ended_at", "created_at", "updated_at")
    exclude = ("search_vector",)
    ordering = ("-updated_at",)

    @admin.display(description="transcript")
    def transcript(self, obj: SessionDigest) -> SafeString:
        return format_html('<a href="{}">open</a>', transcript_url(obj.conversation_id))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
