"""Admin for the answer cache: entries by tier, pin/unpin, forget, edit an answer — every change
goes through memory.librarian.services. The change list shows the hit rate per day and the cached
answers per tier; its rows are the questions asked (answered or not)."""
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.errors import ApplicationError
from memory.librarian import services
from memory.librarian.models import QueryMemory

CHART_DAYS = 14


def _short_time(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "—"


@admin.register(QueryMemory)
class QueryMemoryAdmin(admin.ModelAdmin):
    change_list_template = "admin/librarian/querymemory/change_list.html"
    # Compact columns (short query, numeric dates) so the table fits beside the filters.
    list_display = ("query", "project", "tier", "asks", "hits", "confidence", "has_answer", "pinned",
                    "last_asked_at", "expires")
    list_display_links = ("query",)
    list_filter = ("project", "tier", "pinned", ("answer", admin.EmptyFieldListFilter))
    list_select_related = ("project",)
    search_fields = ("query_text", "answer")
    ordering = ("-last_asked",)
    fields = ("query_text", "project", "answer", "pinned", "tier", "ask_count", "cache_hits", "confidence",
              "feedback_positive", "feedback_negative", "answer_version", "compute_time_ms", "sources",
              "first_asked", "last_asked", "expires_at", "embedding_model")
    readonly_fields = ("query_text", "project", "tier", "ask_count", "cache_hits", "confidence", "feedback_positive",
                       "feedback_negative", "answer_version", "compute_time_ms", "sources", "first_asked",
                       "last_asked", "expires_at", "embedding_model")
    actions = ("pin", "unpin", "forget")

    def get_queryset(self, request: HttpRequest) -> QuerySet[QueryMemory]:
        return super().get_queryset(request).defer("embedding")

    @admin.display(ordering="query_text", description="query")
    def query(self, obj: QueryMemory) -> str:
        return obj.query_text if len(obj.query_text) <= 90 else obj.query_text[:89] + "…"

    @admin.display(ordering="ask_count", description="asks")
    def asks(self, obj: QueryMemory) -> int:
        return obj.ask_count

    @admin.display(ordering="cache_hits", description="hits")
    def hits(self, obj: QueryMemory) -> int:
        return obj.cache_hits

    @admin.display(ordering="last_asked", description="last asked")
    def last_asked_at(self, obj: QueryMemory) -> str:
        return _short_time(obj.last_asked)

    @admin.display(ordering="expires_at", description="expires")
    def expires(self, obj: QueryMemory) -> str:
        return "never (pinned)" if obj.pinned else _short_time(obj.expires_at)

    @admin.display(boolean=True, description="answer")
    def has_answer(self, obj: QueryMemory) -> bool:
        return obj.is_cached

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # "forget" does the same through the service
        return actions

    def save_model(self, request: HttpRequest, obj: QueryMemory, form: Any, change: bool) -> None:
        """An edited answer is remembered (new version, confidence 1.0); clearing it forgets the
        answer but keeps the query's statistics."""
        try:
            if obj.answer and obj.answer.strip():
                services.librarian_remember(query=obj.query_text, answer=obj.answer, pin=obj.pinned,
                                            project=obj.project)
            else:
                QueryMemory.objects.filter(pk=obj.pk).update(answer=None, sources=[], expires_at=None)
                services.librarian_set_pinned(entry_ids=[obj.pk], pinned=obj.pinned)
        except ApplicationError as exc:
            self.message_user(request, exc.message, messages.ERROR)

    def delete_model(self, request: HttpRequest, obj: QueryMemory) -> None:
        services.librarian_forget(query=obj.query_text, project=obj.project)

    @admin.action(description="Pin (never evict or expire)")
    def pin(self, request: HttpRequest, queryset: QuerySet[QueryMemory]) -> None:
        changed = services.librarian_set_pinned(entry_ids=queryset.values_list("pk", flat=True), pinned=True)
        self.message_user(request, f"Pinned {changed} entries.")

    @admin.action(description="Unpin")
    def unpin(self, request: HttpRequest, queryset: QuerySet[QueryMemory]) -> None:
        changed = services.librarian_set_pinned(entry_ids=queryset.values_list("pk", flat=True), pinned=False)
        self.message_user(request, f"Unpinned {changed} entries.")

    @admin.action(description="Forget (delete the query and its answer)")
    def forget(self, request: HttpRequest, queryset: QuerySet[QueryMemory]) -> None:
        forgotten = 0
        for entry in queryset.select_related("project").only("query_text", "project"):
            try:
                services.librarian_forget(query=entry.query_text, project=entry.project)
                forgotten += 1
            except ApplicationError as exc:
                self.message_user(request, exc.message, messages.ERROR)
        self.message_user(request, f"Forgot {forgotten} entries.")

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        """The list of questions asked, with the hit rate and the cached answers per tier above it.
        What is counted, and where: a row is a question asked (the list's count, "N questions");
        a cached answer is a row with an answer (the tiers and the dashboard's tile and chart);
        both numbers are stated side by side, labelled."""
        stats = services.librarian_memory_stats()
        series = services.librarian_hit_rate_series(days=CHART_DAYS)
        cached = max(stats["cached_answers"], 1)
        extra = {
            "cache_stats": stats,
            "unanswered": stats["entries"] - stats["cached_answers"],
            "hit_rate_series": [
                {**point, "percent": round((point["hit_rate"] or 0) * 100)} for point in series
            ],
            "tier_bars": [
                {"tier": tier, "count": count, "percent": round(count * 100 / cached)}
                for tier, count in stats["cached_by_tier"].items()
            ],
        }
        return super().changelist_view(request, extra_context={**(extra_context or {}), **extra})
