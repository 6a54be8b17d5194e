"""Medallion admin: a structured editor validated against the schema (errors shown on the section
they belong to), the history with diffs, an archive action. Saving and deleting call services."""
from __future__ import annotations

import difflib
import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from core.errors import ApplicationError
from medallions import services
from medallions.models import Medallion, MedallionJob, Status

WIDE = {"style": "width: 95%; font-family: monospace", "cols": 100}
JSON_FIELDS = {"subsystems": "summary.subsystems", "decisions": "decisions",
               "open_questions": "open_questions", "affordances": "affordances"}
# The form field that shows an error at a JSON path (longest prefix wins).
PATH_TO_FIELD = [
    ("scope.graph_nodes", "graph_nodes"), ("scope.tags", "tags"), ("meta.status", "status"),
    ("summary.high_level", "high_level"), ("summary.subsystems", "subsystems"), ("summary", "high_level"),
    ("decisions", "decisions"), ("open_questions", "open_questions"), ("affordances", "affordances"),
]


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class MedallionForm(forms.ModelForm):
    graph_nodes = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False,
                                  help_text="one graph node per line, e.g. repo:winni")
    tags = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False, help_text="one tag per line")
    status = forms.ChoiceField(choices=Status.choices, initial=Status.ACTIVE)
    high_level = forms.CharField(label="Summary", widget=forms.Textarea(attrs={"rows": 5, "style": "width: 95%"}), required=False)
    subsystems = forms.CharField(widget=forms.Textarea(attrs={"rows": 6, **WIDE}), required=False,
                                 help_text='JSON list of {"name", "status", "notes"}')
    decisions = forms.CharField(widget=forms.Textarea(attrs={"rows": 12, **WIDE}), required=False,
                                help_text='JSON list of {"id", "statement", "rationale", "confidence" (0-1), "status"}')
    open_questions = forms.CharField(widget=forms.Textarea(attrs={"rows": 8, **WIDE}), required=False,
                                     help_text='JSON list of {"id", "question", "blocked_on", "priority"}')
    affordances = forms.CharField(widget=forms.Textarea(attrs={"rows": 8, **WIDE}), required=False,
                                  help_text='JSON {"recommended_entry_points": [], "avoid_repeating": [], "invariants": []}')

    class Meta:
        model = Medallion
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        instance = self.instance
        if not instance._state.adding:
            self.initial.update({
                "graph_nodes": "\n".join(instance.graph_nodes), "tags": "\n".join(instance.tags),
                "status": instance.status, "high_level": instance.summary.get("high_level", ""),
                "subsystems": _pretty(instance.summary.get("subsystems", [])),
                "decisions": _pretty(instance.decisions), "open_questions": _pretty(instance.open_questions),
                "affordances": _pretty(instance.affordances),
            })
        else:
            self.initial.update({"subsystems": "[]", "decisions": "[]", "open_questions": "[]",
                                 "affordances": _pretty(Medallion().affordances)})

    def _post_clean(self) -> None:
        """The model's own field validation is replaced by the schema check in clean()."""

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        parsed: dict[str, Any] = {}
        for name in JSON_FIELDS:
            raw = data.get(name) or ("{}" if name == "affordances" else "[]")
            try:
                parsed[name] = json.loads(raw)
            except json.JSONDecodeError as exc:
                # Still check the other sections, so every problem shows at once.
                self.add_error(name, f"not valid JSON: {exc}")
                parsed[name] = {} if name == "affordances" else []
        self.document = {
            "meta": {"id": str(self.instance.id), "status": data.get("status"),
                     "model_info": self.instance.model_info or {"provider": "admin", "model": ""}},
            "scope": {"graph_nodes": _lines(data.get("graph_nodes", "")), "tags": _lines(data.get("tags", ""))},
            "summary": {"high_level": data.get("high_level", ""), "subsystems": parsed["subsystems"]},
            "decisions": parsed["decisions"], "open_questions": parsed["open_questions"],
            "affordances": parsed["affordances"],
        }
        try:
            services.validate_document(self.document, existing=None if self.instance._state.adding else self.instance)
        except ApplicationError as exc:
            for problem in exc.extra.get("problems", [{"path": exc.field or "", "message": exc.message}]):
                path = problem["path"]
                field = next((f for prefix, f in PATH_TO_FIELD if path.startswith(prefix)), None)
                self.add_error(field, f"{path}: {problem['message']}")
        return data


@admin.register(Medallion)
class MedallionAdmin(admin.ModelAdmin):
    form = MedallionForm
    list_display = ("__str__", "project", "status", "decision_count", "question_count", "schema_version",
                    "updated_at")
    list_filter = ("project", "status", "updated_at")
    list_select_related = ("project",)
    search_fields = ("search_text",)
    ordering = ("-updated_at",)
    actions = ["archive_selected"]
    readonly_fields = ("id", "project", "schema_version", "created_at", "updated_at", "model_info", "sections",
                       "history")
    fieldsets = [
        (None, {"fields": ("id", "status", "graph_nodes", "tags", "project", "schema_version", "created_at",
                           "updated_at", "model_info")}),
        ("Summary", {"fields": ("high_level", "subsystems")}),
        ("Decisions and open questions", {"fields": ("sections", "decisions", "open_questions")}),
        ("Affordances", {"fields": ("affordances",)}),
        ("History", {"fields": ("history",), "classes": ("collapse",)}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Medallion]:
        return super().get_queryset(request).defer("search_vector")

    @admin.display(description="decisions")
    def decision_count(self, obj: Medallion) -> int:
        return len(obj.decisions or [])

    @admin.display(description="open questions")
    def question_count(self, obj: Medallion) -> int:
        return len(obj.open_questions or [])

    @admin.display(description="as stored")
    def sections(self, obj: Medallion) -> str:
        if obj._state.adding:
            return "-"
        decisions = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((d["id"], d["statement"], f"{d['confidence']:.2f}", d.get("status", "")) for d in obj.decisions),
        )
        questions = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((q["id"], q["question"], q.get("priority", ""), q.get("blocked_on", "")) for q in obj.open_questions),
        )
        return format_html(
            '<table><tr><th>decision</th><th>statement</th><th>confidence</th><th>status</th></tr>{}</table>'
            '<table><tr><th>question</th><th>question</th><th>priority</th><th>blocked on</th></tr>{}</table>',
            decisions, questions,
        )

    @admin.display(description="revisions (newest first, diff against the next version)")
    def history(self, obj: Medallion) -> str:
        if obj._state.adding:
            return "-"
        revisions = services.medallion_history(medallion_id=obj.pk)
        newer = obj.document()
        blocks = []
        for revision in revisions:
            diff = difflib.unified_diff(
                _pretty(revision.document).splitlines(), _pretty(newer).splitlines(),
                fromfile=f"revision {revision.number}", tofile="next version", lineterm="", n=1,
            )
            blocks.append((revision.number, revision.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                           revision.actor or "-", revision.operation, "\n".join(diff)))
            newer = revision.document
        if not blocks:
            return "no earlier versions"
        return format_html_join(
            "", "<h4>revision {} — {} by {} ({})</h4><pre style='white-space:pre-wrap'>{}</pre>", blocks
        )

    def save_model(self, request: HttpRequest, obj: Medallion, form: MedallionForm, change: bool) -> None:
        actor = f"admin:{request.user.get_username()}"
        if change:
            saved = services.medallion_update(medallion_id=obj.pk, document=form.document, actor=actor)
        else:
            saved = services.medallion_create(document=form.document, actor=actor)
        obj.__dict__.update({k: v for k, v in saved.__dict__.items() if not k.startswith("_")})

    def delete_model(self, request: HttpRequest, obj: Medallion) -> None:
        services.medallion_delete(medallion_id=obj.pk, actor=f"admin:{request.user.get_username()}")

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Medallion]) -> None:
        for medallion in queryset:
            self.delete_model(request, medallion)

    @admin.action(description="Archive selected medallions")
    def archive_selected(self, request: HttpRequest, queryset: QuerySet[Medallion]) -> None:
        actor = f"admin:{request.user.get_username()}"
        for medallion in queryset:
            services.medallion_archive(medallion_id=medallion.pk, actor=actor)
        self.message_user(request, f"Archived {queryset.count()} medallion(s).", messages.SUCCESS)


@admin.register(MedallionJob)
class MedallionJobAdmin(admin.ModelAdmin):
    list_display = ("id", "status", "operation", "graph_nodes", "tags", "provider", "created_at", "finished_at")
    list_filter = ("status", "operation", "provider")
    list_select_related = ("medallion",)
    readonly_fields = ("id", "status", "operation", "graph_nodes", "tags", "evidence", "actor", "provider",
                       "medallion", "error", "created_at", "started_at", "finished_at")
    ordering = ("-created_at",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
