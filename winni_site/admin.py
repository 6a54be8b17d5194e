from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Exists, F, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce, Greatest
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse

from core import anchors, projects
from core.admin_mixins import ServiceErrorsAsMessages
from core.errors import ApplicationError
from core.models import Anchor, LLMCall, Project, ProjectFile, ProjectKey
from winni_site import auth, charts, dashboard
from winni_site.models import ApiToken, BackupRun


class ApiTokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ("name",)
        help_texts = {"name": "Who uses it, e.g. laptop-claude or ci. The secret is shown once, after saving."}

    def clean_name(self) -> str:
        name = (self.cleaned_data.get("name") or "").strip()
        if not auth.NAME_PATTERN.match(name):
            raise forms.ValidationError("1-100 characters of letters, digits, '_', '.', '@' or '-', "
                                        "starting with a letter or digit.")
        return name


@admin.register(ApiToken)
class ApiTokenAdmin(ServiceErrorsAsMessages, admin.ModelAdmin):
    """Tokens for /mcp and /api/. Superusers create them here (the secret is shown once, on the
    page that follows; only its SHA-256 is stored) and revoke them (a revoked token stops working
    at once and stays listed). Both go through winni_site.auth, like `manage.py winni_token`."""

    form = ApiTokenForm
    list_display = ("name", "state", "created_at", "last_used_at", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name",)
    readonly_fields = ("name", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke_selected"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.readonly_fields if obj else ("name",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.readonly_fields if obj else ()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a token is never edited: revoke it and create another

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked tokens stay listed (who had access, until when)

    def get_actions(self, request: HttpRequest) -> dict:
        return super().get_actions(request) if request.user.is_superuser else {}

    @admin.display(description="state")
    def state(self, obj: ApiToken) -> str:
        return "revoked" if obj.is_revoked else "active"

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        token, secret = auth.token_create(name=form.cleaned_data["name"])
        obj.pk, obj.created_at, obj.secret_sha256 = token.pk, token.created_at, token.secret_sha256
        # Kept on this request's object only (the ModelAdmin is shared by concurrent requests).
        obj._winni_secret = secret  # type: ignore[attr-defined]  # an attribute of this one object, not a field

    def response_add(self, request: HttpRequest, obj: ApiToken, post_url_continue: Any = None) -> HttpResponse:
        """The one page that shows the secret: rendered here, never stored (not even in a message)."""
        secret = getattr(obj, "_winni_secret", None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Token {obj.name} created",
            "opts": self.model._meta,
            "token": obj,
            "secret": secret,
            "mcp_url": request.build_absolute_uri("/mcp"),
            "changelist_url": reverse("admin:winni_site_apitoken_changelist"),
        }
        return TemplateResponse(request, "admin/winni_site/apitoken/created.html", context)


    @admin.action(description="Revoke the selected tokens (they stop working at once)")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        if not request.user.is_superuser:
            raise PermissionDenied
        names = [name for name in queryset.filter(revoked_at__isnull=True).values_list("name", flat=True)]
        for name in names:
            auth.token_revoke(name=name)
        self.message_user(request, f"Revoked {len(names)} token(s): {', '.join(names) or 'none was active'}.",
                          messages.SUCCESS)


@admin.register(BackupRun)
class BackupRunAdmin(admin.ModelAdmin):
    """Read-only history of scheduled backups (`manage.py winni_backup` runs are not listed)."""

    list_display = ("started_at", "status", "attempts", "size_bytes", "path", "finished_at")
    list_filter = ("status",)
    readonly_fields = [f.name for f in BackupRun._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(LLMCall)
class LLMCallAdmin(admin.ModelAdmin):
    """Read-only: every call Winni made to the configured LLM, written by core.llm (the dashboard's
    LLM panel sums today's)."""

    list_display = ("started_at", "purpose", "provider", "model", "input_tokens", "output_tokens", "cost_usd",
                    "outcome", "duration_ms")
    list_filter = ("purpose", "outcome", "provider")
    search_fields = ("model", "error")
    date_hierarchy = "started_at"
    readonly_fields = [f.name for f in LLMCall._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# --- projects -----------------------------------------------------------------------------------
# The project page spans every store (its conversations, memories, medallions, contexts and an
# activity chart), so the admin of core's Project lives here, in the assembly.

PAGE_ROWS = 10
ACTIVITY_DAYS = 30


class ProjectKeyInline(admin.TabularInline):
    model = ProjectKey
    fields = ("kind", "value", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name_plural = "identity keys (how capture recognises the project)"

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class ProjectForm(forms.ModelForm):
    path = forms.CharField(required=False, help_text="The git root it lives in: capture finds the project there.")
    remote = forms.CharField(required=False, help_text="Its git remote URL (origin).")
    recall_inject = forms.BooleanField(
        required=False, label="Automatic recall",
        help_text="The Claude Code hooks add what Winni knows to each prompt of this project's sessions "
                  "(WINNI_RECALL_INJECT turns it off everywhere).")

    class Meta:
        model = Project
        fields = ("name",)
        widgets = {"name": forms.TextInput(attrs={"size": 60})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from agents.autorecall import project_recall_enabled

        self.fields["recall_inject"].initial = project_recall_enabled(self.instance if self.instance.pk else None)


def _count_subquery(store: projects.ProjectStore) -> Subquery:
    """A correlated count of one store's rows of the project, evaluated for the page's rows only."""
    rows = store.model._default_manager.filter(**{store.lookup: OuterRef("pk")}).order_by().values(store.lookup)
    return Subquery(rows.annotate(n=Count("*")).values("n"), output_field=IntegerField())


@admin.register(Project)
class ProjectAdmin(ServiceErrorsAsMessages, admin.ModelAdmin):
    form = ProjectForm
    change_form_template = "admin/core/project/change_form.html"
    list_display = ("slug", "name", "last_activity_at", "rows", "created_at")
    search_fields = ("slug", "name", "keys__value")
    ordering = ("-last_activity_at",)
    inlines = [ProjectKeyInline]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ("name", "slug", "recall_inject", "created_at", "last_activity_at") if obj else ("name", "path", "remote")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ("slug", "created_at", "last_activity_at") if obj else ()

    def get_queryset(self, request: HttpRequest) -> QuerySet[Project]:
        counted = {f"_rows_{store.label}": Coalesce(_count_subquery(store), 0)
                   for store in projects.stores() if store.counted}
        return super().get_queryset(request).annotate(**counted)

    @admin.display(description="rows")
    def rows(self, obj: Project) -> str:
        found = [(store.label.replace("_", " "), getattr(obj, f"_rows_{store.label}", 0))
                 for store in projects.stores() if store.counted]
        return " · ".join(f"{n} {label}" for label, n in found if n) or "—"

    def save_model(self, request: HttpRequest, obj: Project, form: Any, change: bool) -> None:
        if change:
            if "recall_inject" in form.changed_data:
                from agents.autorecall import project_recall_set

                obj.settings = project_recall_set(project=obj.slug, enabled=form.cleaned_data["recall_inject"]).settings
            if "name" not in form.changed_data:
                return
            saved = projects.project_rename(project=obj, name=obj.name)
        else:
            saved = projects.project_create(name=obj.name, path=form.cleaned_data.get("path") or None,
                                            remote=form.cleaned_data.get("remote") or None)
        obj.pk, obj.slug, obj.created_at = saved.pk, saved.slug, saved.created_at


    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        project = Project.objects.filter(pk=object_id).first() if object_id.isdigit() else None
        extra = project_page_context(request, project) if project else {}
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})

    def get_urls(self) -> list:
        merge = path("<int:object_id>/merge/", self.admin_site.admin_view(self.merge_view), name="core_project_merge")
        return [merge, *super().get_urls()]

    def merge_view(self, request: HttpRequest, object_id: int) -> HttpResponse:
        """Merge this project into the one chosen on its page (core.projects.project_merge)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        source = get_object_or_404(Project, pk=object_id)
        if not self.has_change_permission(request, source) or not self.has_delete_permission(request, source):
            raise PermissionDenied
        target = Project.objects.filter(pk=request.POST.get("into") or 0).first() if (
            request.POST.get("into") or "").isdigit() else None
        if target is None:
            self.message_user(request, "Choose the project to merge into.", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:core_project_change", args=[source.pk]))
        try:
            moved = projects.project_merge(source=source, target=target)
        except ApplicationError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(reverse("admin:core_project_change", args=[source.pk]))
        rows = ", ".join(f"{n} {label.replace('_', ' ')}" for label, n in moved.items())
        self.message_user(request, f"Merged {source.slug} into {target.slug} ({rows}).", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:core_project_change", args=[target.pk]))


def project_page_context(request: HttpRequest, project: Project) -> dict[str, Any]:
    """What the project page shows below its form: activity, the latest rows of each store the
    user may view (each with a link to the whole filtered list), and the merge form."""
    from contexts.models import StartupContext
    from conversations.admin import conversation_title, transcript_url
    from conversations.models import Conversation, Message
    from medallions.models import Medallion
    from memory.models import Memory
    from winni_site.admin_views import can_view, changelist_url

    def listing(title: str, model: Any, rows: Any, describe: Any) -> dict[str, Any] | None:
        if not can_view(request, model):
            return None
        url = changelist_url(model)
        return {"title": title,
                "all_url": f"{url}?project__id__exact={project.pk}" if url else None,
                "rows": [describe(row) for row in rows[:PAGE_ROWS]]}

    def change_link(row: Any) -> str | None:
        try:
            return reverse(f"admin:{row._meta.app_label}_{row._meta.model_name}_change", args=[row.pk])
        except NoReverseMatch:
            return None

    sections = [
        listing("Conversations", Conversation,
                Conversation.objects.filter(project=project).order_by(F("last_message_at").desc(nulls_last=True)),
                lambda c: {"text": conversation_title(c) + (f" — {c.session_id}" if c.title and c.session_id else ""),
                           "when": c.last_message_at or c.updated_at,
                           "url": transcript_url(c.pk)}),
        listing("Memories", Memory, Memory.objects.filter(project=project).defer("search_vector").order_by("-created_at"),
                lambda m: {"text": m.content[:120], "when": m.created_at, "url": change_link(m)}),
        listing("Medallions", Medallion, Medallion.objects.filter(project=project).defer("search_vector").order_by("-updated_at"),
                lambda m: {"text": f"{m} ({m.status})", "when": m.updated_at, "url": change_link(m)}),
        listing("Startup contexts", StartupContext, StartupContext.objects.filter(project=project).defer("search_vector").order_by("name"),
                lambda c: {"text": f"{c.name}{' (active)' if c.is_active else ''}", "when": c.updated_at,
                           "url": change_link(c)}),
    ]
    context: dict[str, Any] = {"project_sections": [s for s in sections if s is not None],
                               "merge_targets": Project.objects.exclude(pk=project.pk).order_by("slug"),
                               "merge_url": reverse("admin:core_project_merge", args=[project.pk])}
    if can_view(request, Message):
        days = dashboard.messages_per_day(ACTIVITY_DAYS, project=project)
        context["activity_chart"] = charts.bar_chart(
            [(day.strftime("%b %d"), n) for day, n in days],
            title=f"Messages per day in {project.slug} (last {ACTIVITY_DAYS} days, UTC)", width=1100, label_every=5)
    return context


class PossiblyStaleFilter(admin.SimpleListFilter):
    """Anchors whose file changed after the item was written or last confirmed (by path: the
    column shows the exact mark, which also reads content hashes and bare file names)."""

    title = "possibly stale"
    parameter_name = "stale"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "possibly stale"), ("no", "holds")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        since = Greatest(OuterRef("anchored_at"), Coalesce(OuterRef("confirmed_at"), OuterRef("anchored_at")))
        changed = ProjectFile.objects.filter(project_id=OuterRef("project_id"), path=OuterRef("path"),
                                             changed_at__gt=since)
        if self.value() == "yes":
            return queryset.filter(Exists(changed))
        if self.value() == "no":
            return queryset.exclude(Exists(changed))
        return queryset


@admin.register(Anchor)
class AnchorAdmin(admin.ModelAdmin):
    """Items that name project files (memories, decisions, invariants, turns, digests) and what
    changed since: confirm that one still holds (the mark clears until the next change) or
    supersede it (core.anchors)."""

    list_display = ("item_key", "path", "project", "anchored_at", "mark", "confirmed_at")
    list_filter = (PossiblyStaleFilter, "project")
    search_fields = ("item_key", "path")
    list_select_related = ("project",)
    ordering = ("-anchored_at",)
    actions = ("confirm_items", "supersede_items")
    readonly_fields = [f.name for f in Anchor._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="what changed since")
    def mark(self, obj: Anchor) -> str:
        found = anchors.marks([obj.item_key]).get(obj.item_key, [])
        return "; ".join(m.text for m in found if m.path == obj.path or m.path.endswith(f"/{obj.path}")) or "—"

    @admin.action(description="Confirm: the selected items still hold")
    def confirm_items(self, request: HttpRequest, queryset: QuerySet[Anchor]) -> None:
        keys = sorted(set(queryset.values_list("item_key", flat=True)))
        for key in keys:
            anchors.item_confirm(item=key, actor=str(request.user))
        self.message_user(request, f"Confirmed {len(keys)} item(s): their marks clear until a file changes again.")

    @admin.action(description="Supersede: the selected items no longer hold")
    def supersede_items(self, request: HttpRequest, queryset: QuerySet[Anchor]) -> None:
        done, refused = 0, []
        for key in sorted(set(queryset.values_list("item_key", flat=True))):
            try:
                anchors.item_supersede(item=key, actor=str(request.user))
                done += 1
            except ApplicationError as exc:
                refused.append(f"{key}: {exc.detail}")
        if done:
            self.message_user(request, f"Superseded {done} item(s).")
        for reason in refused:
            self.message_user(request, reason, messages.ERROR)
