"""Admin lists for conversations and orchestration results. Deletions go through the services
(the same code path as the API). The transcript page itself belongs to the admin area."""
from typing import Any

from django.contrib import admin
from django.contrib.postgres.search import SearchQuery
from django.db.models import Count, DateTimeField, IntegerField, Max, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest

from conversations import services
from conversations.models import Conversation, FiedlerResult, Message
from winni_site.admin_views import TranscriptAdminMixin


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


@admin.register(Conversation)
class ConversationAdmin(TranscriptAdminMixin, admin.ModelAdmin):
    list_display = ("id", "session_id", "message_count", "first_activity", "last_activity")
    search_fields = ("session_id",)
    search_help_text = "Session id, or words from the messages (web-search syntax)."
    readonly_fields = ("id", "session_id", "metadata", "created_at", "updated_at")
    ordering = ("-updated_at",)
    inlines = [MessageInline]
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _message_count=Coalesce(_per_conversation(Count("*"), IntegerField()), 0),
                _first_activity=Coalesce(_per_conversation(Min("created_at"), DateTimeField()), "created_at"),
                _last_activity=Coalesce(_per_conversation(Max("created_at"), DateTimeField()), "updated_at"),
            )
        )

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
        return queryset.filter(Q(session_id__icontains=term) | Q(pk__in=matching)), False

    @admin.display(ordering="_message_count", description="messages")
    def message_count(self, obj: Conversation) -> int:
        return obj._message_count  # type: ignore[attr-defined]

    @admin.display(ordering="_first_activity", description="first activity")
    def first_activity(self, obj: Conversation) -> Any:
        return obj._first_activity  # type: ignore[attr-defined]

    @admin.display(ordering="_last_activity", description="last activity")
    def last_activity(self, obj: Conversation) -> Any:
        return obj._last_activity  # type: ignore[attr-defined]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def delete_model(self, request: HttpRequest, obj: Conversation) -> None:
        services.conversation_delete(conversation_id=obj.pk, force=True)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
        for pk in queryset.values_list("pk", flat=True):
            services.conversation_delete(conversation_id=pk, force=True)


@admin.register(FiedlerResult)
class FiedlerResultAdmin(admin.ModelAdmin):
    list_display = (
        "correlation_id", "model", "status", "tokens_prompt", "tokens_completion", "duration_seconds", "created_at",
    )
    list_filter = ("model", "status", "created_at")
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

    def delete_model(self, request: HttpRequest, obj: FiedlerResult) -> None:
        services.fiedler_result_delete(result=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[FiedlerResult]) -> None:
        for result in queryset:
            services.fiedler_result_delete(result=result)
