"""Startup context editor: a large text area, one-click activation, the audit trail on the page.
Saves, deletes and activations go through contexts.services so they are audited like any other."""
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from contexts import services
from contexts.models import StartupContext, StartupContextAudit
from core.admin_mixins import NoDjangoLogEntries, ServiceErrorsAsMessages


def _actor(request: HttpRequest) -> str:
    return f"admin:{request.user.get_username()}"


def _activated(context: StartupContext) -> str:
    scope = f"of project {context.project.slug}" if context.project is not None else "global"
    return f"{context.name!r} is now the active {scope} startup context."


class StartupContextForm(forms.ModelForm):
    class Meta:
        model = StartupContext
        fields = ("name", "project", "content", "is_active")
        help_texts = {"project": "Empty: a global context, loaded in every session before the project's own."}
        widgets = {"content": forms.Textarea(attrs={"rows": 30, "cols": 120, "style": "font-family: monospace"})}


@admin.register(StartupContext)
class StartupContextAdmin(NoDjangoLogEntries, ServiceErrorsAsMessages, admin.ModelAdmin):
    form = StartupContextForm
    list_display_links = ("name",)
    list_filter = ("project", "is_active")
    list_select_related = ("project",)
    search_fields = ("name", "content")
    ordering = ("project__slug", "name")
    actions = ["activate_selected"]

    def get_list_display(self, request: HttpRequest) -> Any:
        @admin.display(description="activate")
        def activate_button(obj: StartupContext) -> str:
            if obj.is_active:
                return mark_safe("<strong>active</strong>")
            url = reverse("admin:contexts_startupcontext_activate", args=[obj.pk])
            # The list is itself a <form> (actions) and forms cannot nest: a nested form is
            # dropped by the browser and the button would submit the list. So the button posts
            # the list's form (which carries the CSRF token) to the activate URL instead.
            return format_html(
                '<button type="submit" formaction="{}" formmethod="post" class="button">Activate</button>', url
            )

        return ("name", "project", "is_active", "updated_at", activate_button)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # Name and project are the key every interface uses; changing them would orphan the trail.
        return ("name", "project", "audit_trail") if obj else ("audit_trail",)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = ("name", "project", "content", "is_active")
        return (*fields, "audit_trail") if obj else fields

    @admin.display(description="audit trail")
    def audit_trail(self, obj: StartupContext) -> str:
        rows = services.context_audit(name=obj.name, project=obj.project)
        if not rows:
            return "—"
        body = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            ((r.at.strftime("%Y-%m-%d %H:%M:%S"), r.action, r.actor, r.sha256_before[:12], r.sha256_after[:12])
             for r in rows),
        )
        return format_html(
            "<table><thead><tr><th>when</th><th>action</th><th>who</th><th>sha256 before</th>"
            "<th>sha256 after</th></tr></thead><tbody>{}</tbody></table>", body,
        )

    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
                     ) -> HttpResponse:
        """The HISTORY button: the context's audit trail (who created, changed, activated it), newest
        first, with the content hashes before and after."""
        context = self.get_object(request, unquote(object_id))
        if context is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)  # type: ignore[attr-defined]  # Django's own not-found answer; private, so not in the stubs
        if not self.has_view_or_change_permission(request, context):
            raise PermissionDenied
        entries = [{"title": f"sha256 {r.sha256_before[:12] or '—'} → {r.sha256_after[:12] or '—'}", "when": r.at,
                    "who": r.actor, "what": r.action} for r in services.context_audit(name=context.name,
                                                                                       project=context.project)]
        page = {**self.admin_site.each_context(request), "title": f"History: {context}", "subtitle": None,
                "opts": self.opts, "object": context, "entries": entries,
                "empty": "No audit rows for this context yet."}
        return TemplateResponse(request, "winni_admin/history.html", page)

    def get_urls(self) -> list:
        extra = [
            path("<path:object_id>/activate/", self.admin_site.admin_view(self.activate_view),
                 name="contexts_startupcontext_activate"),
        ]
        return extra + super().get_urls()

    def activate_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_change_permission(request):
            return HttpResponse(status=403)
        context = get_object_or_404(StartupContext, pk=object_id)
        services.context_activate(name=context.name, actor=_actor(request), project=context.project)
        self.message_user(request, _activated(context), messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:contexts_startupcontext_changelist"))

    @admin.action(description="Activate the selected context (exactly one)")
    def activate_selected(self, request: HttpRequest, queryset: Any) -> None:
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one context to activate.", messages.ERROR)
            return
        context = queryset.get()
        services.context_activate(name=context.name, actor=_actor(request), project=context.project)
        self.message_user(request, _activated(context), messages.SUCCESS)

    def save_model(self, request: HttpRequest, obj: StartupContext, form: Any, change: bool) -> None:
        saved = services.context_set(
            name=obj.name, content=obj.content, set_active=obj.is_active, actor=_actor(request),
            mode="update" if change else "create", project=obj.project,
        )
        obj.pk, obj.created_at, obj.updated_at = saved.pk, saved.created_at, saved.updated_at

    def delete_model(self, request: HttpRequest, obj: StartupContext) -> None:
        services.context_delete(name=obj.name, force=True, actor=_actor(request), project=obj.project)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for context in queryset:
            services.context_delete(name=context.name, force=True, actor=_actor(request), project=context.project)



@admin.register(StartupContextAudit)
class StartupContextAuditAdmin(admin.ModelAdmin):
    """Read-only: the trail of every context, including deleted ones."""

    list_display = ("at", "context_name", "project", "action", "actor", "sha256_before_short", "sha256_after_short")
    list_filter = ("action", "project")
    list_select_related = ("project",)
    search_fields = ("context_name", "actor")
    ordering = ("-at", "-id")

    @admin.display(description="sha256 before")
    def sha256_before_short(self, obj: StartupContextAudit) -> str:
        return obj.sha256_before[:12]

    @admin.display(description="sha256 after")
    def sha256_after_short(self, obj: StartupContextAudit) -> str:
        return obj.sha256_after[:12]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
