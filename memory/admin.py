"""Admin: browse memories, filter by tag, add, edit (a new version, through the services, with the
earlier versions listed on the memory's page) and delete; see which embedding models exist and
which one search uses."""
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from core import anchors
from core.errors import ApplicationError
from memory import services
from memory.models import EmbeddingModel, Memory, MemoryVersion


class TagFilter(admin.SimpleListFilter):
    title = "tag"
    parameter_name = "tag"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        tags = sorted({tag for row in Memory.objects.values_list("tags", flat=True)[:5000] for tag in row})
        return [(tag, tag) for tag in tags[:200]]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(tags__contains=[self.value()]) if self.value() else queryset


class SupersededFilter(admin.SimpleListFilter):
    title = "superseded"
    parameter_name = "superseded"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("no", "current"), ("yes", "superseded")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() in ("yes", "no"):
            return queryset.filter(superseded_by__isnull=self.value() == "no")
        return queryset


class MemoryForm(forms.ModelForm):
    reason = forms.CharField(required=False, widget=forms.TextInput(attrs={"size": 80}),
                             help_text="Why the content or tags changed (kept with the previous version).")

    class Meta:
        model = Memory
        fields = ("content", "project", "tags", "metadata")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None  # a ModelForm's clean() returns its cleaned_data
        try:
            data["content"] = services.validate_content(data.get("content") or "")
            data["tags"] = services.validate_tags(data.get("tags") or [])
        except ApplicationError as exc:
            raise forms.ValidationError({exc.field or "content": exc.message}) from exc
        if self.instance.pk:
            twin = Memory.objects.filter(content_hash=services.content_hash(data["content"]),
                                         project_id=self.instance.project_id).exclude(pk=self.instance.pk).first()
            if twin is not None:
                raise forms.ValidationError({"content": f"memory {twin.pk} already says this; update or supersede "
                                                        "that one instead"})
        return data


class MemoryVersionInline(admin.TabularInline):
    """The earlier versions, newest first: read only (history is never edited)."""

    model = MemoryVersion
    verbose_name = "earlier version"
    verbose_name_plural = "earlier versions"
    fields = ("version", "content", "tags", "written_at", "written_by", "reason", "replaced_at", "replaced_by")
    readonly_fields = fields
    ordering = ("-version",)
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    form = MemoryForm
    inlines = [MemoryVersionInline]
    list_display = ("short_content", "project", "tag_list", "version", "created_at")
    list_filter = ("project", TagFilter, SupersededFilter, "created_at")
    list_select_related = ("project",)
    search_fields = ("content",)
    ordering = ("-created_at",)
    actions = ["delete_selected_memories"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Memory]:
        return super().get_queryset(request).defer("search_vector")

    def get_readonly_fields(self, request: HttpRequest, obj: Memory | None = None) -> tuple[str, ...]:
        # Content and tags change through memory_update (a new version); the rest is fixed.
        return ("project", "metadata", "created_at", "version", "updated_at", "updated_by", "update_reason",
                "superseded_by", "superseded_at", "conversation_id", "message_id", "possibly_stale") if obj else ()

    def get_inline_instances(self, request: HttpRequest, obj: Memory | None = None) -> list[Any]:
        return super().get_inline_instances(request, obj) if obj is not None else []

    def get_fields(self, request: HttpRequest, obj: Memory | None = None) -> list[str | list[str] | tuple[str, ...]]:
        if obj is None:
            return ["content", "project", "tags", "metadata"]
        return ["content", "tags", "reason", "possibly_stale", "project", "metadata", "created_at", "version",
                "updated_at",
                "updated_by", "update_reason", "superseded_by", "superseded_at", "conversation_id", "message_id"]

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    @admin.display(description="content")
    def short_content(self, obj: Memory) -> str:
        return obj.content[:100]

    @admin.display(description="possibly stale")
    def possibly_stale(self, obj: Memory) -> str:
        """What changed since in the files it names (core.anchors); confirm or supersede it on the
        Anchors page or with the MCP tool winni_item_confirm."""
        marks = anchors.marks([f"memory:{obj.pk}"]).get(f"memory:{obj.pk}", [])
        return "; ".join(mark.text for mark in marks) or "no: the files it names have not changed since"

    @admin.display(description="tags")
    def tag_list(self, obj: Memory) -> str:
        return ", ".join(obj.tags)

    def save_model(self, request: HttpRequest, obj: Memory, form: Any, change: bool) -> None:
        if change:
            try:
                memory, changed = services.memory_update(
                    memory_id=obj.pk, content=form.cleaned_data["content"], tags=form.cleaned_data["tags"],
                    reason=form.cleaned_data.get("reason") or "", actor=request.user.get_username())
            except ApplicationError as exc:
                self.message_user(request, exc.message, messages.ERROR)
                return
            if changed:
                self.message_user(request, f"Saved as version {memory.version}; the previous text is kept below.",
                                  messages.SUCCESS)
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

