"""Admin: browse memories, filter by tag, add and delete (through the services); see which
embedding models exist and which one search uses."""
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core.errors import ApplicationError
from memory import services
from memory.models import EmbeddingModel, Memory


class TagFilter(admin.SimpleListFilter):
    title = "tag"
    parameter_name = "tag"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        tags = sorted({tag for row in Memory.objects.values_list("tags", flat=True)[:5000] for tag in row})
        return [(tag, tag) for tag in tags[:200]]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(tags__contains=[self.value()]) if self.value() else queryset


class MemoryForm(forms.ModelForm):
    class Meta:
        model = Memory
        fields = ("content", "project", "tags", "metadata")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        try:
            data["content"] = services.validate_content(data.get("content") or "")
            data["tags"] = services.validate_tags(data.get("tags") or [])
        except ApplicationError as exc:
            raise forms.ValidationError({exc.field or "content": exc.message}) from exc
        return data


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    form = MemoryForm
    list_display = ("short_content", "project", "tag_list", "created_at")
    list_filter = ("project", TagFilter, "created_at")
    list_select_related = ("project",)
    search_fields = ("content",)
    ordering = ("-created_at",)
    actions = ["delete_selected_memories"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        return super().get_queryset(request).defer("search_vector")

    def has_change_permission(self, request: HttpRequest, obj: Memory | None = None) -> bool:
        # Memories are facts: a stored one is shown read-only (no Save buttons); add a new one.
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> tuple[str, ...]:
        # Memories are facts: edit by storing a new one.
        return ("content", "project", "tags", "metadata", "created_at", "conversation_id", "message_id") if obj else ()

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.display(description="content")
    def short_content(self, obj: Memory) -> str:
        return obj.content[:100]

    @admin.display(description="tags")
    def tag_list(self, obj: Memory) -> str:
        return ", ".join(obj.tags)

    def save_model(self, request: HttpRequest, obj: Memory, form: Any, change: bool) -> None:
        if change:
            return
        memory, created = services.memory_store(content=form.cleaned_data["content"], tags=form.cleaned_data["tags"],
                                                metadata=form.cleaned_data.get("metadata"),
                                                project=form.cleaned_data.get("project"))
        obj.pk, obj.created_at = memory.pk, memory.created_at
        if not created:
            self.message_user(request, "This content was already remembered; kept the existing memory.",
                              messages.WARNING)

    def delete_model(self, request: HttpRequest, obj: Memory) -> None:
        services.memory_delete(memory_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        for memory_id in list(queryset.values_list("pk", flat=True)):
            services.memory_delete(memory_id=memory_id)

    @admin.action(description="Delete the selected memories")
    def delete_selected_memories(self, request: HttpRequest, queryset: QuerySet) -> None:
        count = queryset.count()
        self.delete_queryset(request, queryset)
        self.message_user(request, f"Deleted {count} memories.", messages.SUCCESS)


@admin.register(EmbeddingModel)
class EmbeddingModelAdmin(admin.ModelAdmin):
    list_display = ("name", "dimensions", "provider", "is_active", "activated_at")
    readonly_fields = ("name", "dimensions", "provider", "is_active", "created_at", "activated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # chosen by settings and `winni_reembed`: shown read-only

