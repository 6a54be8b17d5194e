from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from conversations.models import Conversation, Message
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


@admin.register(Conversation)
class ConversationAdmin(TranscriptAdminMixin, admin.ModelAdmin):
    list_display = ("id", "session_id", "message_count", "created_at", "updated_at")
    search_fields = ("session_id",)
    readonly_fields = ("id", "session_id", "metadata", "created_at", "updated_at")
    ordering = ("-updated_at",)
    inlines = [MessageInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Conversation]:
        return super().get_queryset(request).annotate(_message_count=Count("messages"))

    @admin.display(ordering="_message_count", description="messages")
    def message_count(self, obj: Conversation) -> int:
        return obj._message_count  # type: ignore[attr-defined]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
