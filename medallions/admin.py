"""Medallion admin: a structured editor validated against the schema (errors shown on the section
they belong to), the history with diffs, an archive action. Saving and deleting call services."""
from __future__ import annotations

import difflib
import json
import re
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from core.admin_mixins import NoDjangoLogEntries
from core.errors import ApplicationError
from medallions import schema, services
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


def canonical(value: Any) -> str:
    """The JSON a revision diff compares: keys sorted, so reordering alone shows no change."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _choices(literal: Any) -> list[tuple[str, str]]:
    return [(value, value.replace("_", " ")) for value in literal.__args__]


TEXT_ROW = {"rows": 2, "cols": 60}


class DecisionRow(forms.Form):
    id = forms.CharField(max_length=schema.MAX_ID_CHARS, required=False, help_text="blank: the next D-NNN",
                         widget=forms.TextInput(attrs={"size": 8}))
    statement = forms.CharField(max_length=schema.MAX_LINE_CHARS, widget=forms.Textarea(attrs=TEXT_ROW))
    rationale = forms.CharField(max_length=schema.MAX_LINE_CHARS, required=False,
                                widget=forms.Textarea(attrs=TEXT_ROW))
    confidence = forms.FloatField(min_value=0, max_value=1, initial=0.8,
                                  widget=forms.NumberInput(attrs={"step": "0.05", "style": "width: 5em"}))
    status = forms.ChoiceField(choices=_choices(schema.DecisionStatus), initial="active")


class QuestionRow(forms.Form):
    id = forms.CharField(max_length=schema.MAX_ID_CHARS, required=False, help_text="blank: the next Q-NNN",
                         widget=forms.TextInput(attrs={"size": 8}))
    question = forms.CharField(max_length=schema.MAX_LINE_CHARS, widget=forms.Textarea(attrs=TEXT_ROW))
    blocked_on = forms.CharField(max_length=schema.MAX_LINE_CHARS, required=False,
                                 widget=forms.Textarea(attrs=TEXT_ROW))
    priority = forms.ChoiceField(choices=_choices(schema.Priority), initial="medium")


class InvariantRow(forms.Form):
    text = forms.CharField(label="invariant", max_length=schema.MAX_LINE_CHARS,
                           widget=forms.TextInput(attrs={"size": 100}))


# Each row section: its formset, the prefix of its ids, and where its list sits in the document.
ROW_SECTIONS: dict[str, tuple[type[forms.BaseFormSet[Any]], str, str]] = {
    "decisions": (forms.formset_factory(DecisionRow, extra=1, can_delete=True), "D", "decisions"),
    "open_questions": (forms.formset_factory(QuestionRow, extra=1, can_delete=True), "Q", "open_questions"),
    "invariants": (forms.formset_factory(InvariantRow, extra=1, can_delete=True), "", "affordances.invariants"),
}
ROW_TITLES = {"decisions": "Decisions", "open_questions": "Open questions", "invariants": "Invariants"}


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
        stored: dict[str, list[dict[str, Any]]] = {"decisions": [], "open_questions": [], "invariants": []}
        if not instance._state.adding:
            stored = {"decisions": instance.decisions or [], "open_questions": instance.open_questions or [],
                      "invariants": [{"text": line} for line in (instance.affordances or {}).get("invariants", [])]}
        # The rows are the editor; the JSON fields stay for experts (a changed JSON field wins).
        self.row_sets = {
            name: formset(data=self.data if self._rows_posted(name) else None, prefix=f"rows-{name}",
                          initial=stored[name])
            for name, (formset, _, _) in ROW_SECTIONS.items()
        }
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

    def _rows_posted(self, name: str) -> bool:
        return bool(self.is_bound and f"rows-{name}-TOTAL_FORMS" in self.data)

    def row_sections(self) -> list[dict[str, Any]]:
        return [{"name": name, "title": ROW_TITLES[name], "formset": formset}
                for name, formset in self.row_sets.items()]

    def _json_changed(self, name: str, raw: str) -> bool:
        """The expert edited this JSON field (parsed, so re-indenting is no change)."""
        initial = self.get_initial_for_field(self.fields[name], name)
        try:
            return json.loads(raw or "null") != json.loads(initial or "null")
        except json.JSONDecodeError:
            return True

    def _rows(self, name: str) -> list[Any] | None:
        """The section's rows as document items (ids filled in), or None when a row is invalid.
        Remembers which form each item came from, so schema errors land on that row."""
        formset = self.row_sets[name]
        if not formset.is_valid():
            return None
        _, letter, _ = ROW_SECTIONS[name]
        # Stored rows stay unless deleted; an extra row counts once something was typed in it.
        kept = [form for index, form in enumerate(formset.forms)
                if (index < formset.initial_form_count() or form.has_changed())
                and form.cleaned_data and not form.cleaned_data.get("DELETE")]
        taken = {form.cleaned_data.get("id") for form in kept}
        items, number = [], 0
        for form in kept:
            row = {key: value for key, value in form.cleaned_data.items() if key != "DELETE"}
            if name == "invariants":
                items.append(row["text"])
                continue
            if not row.get("id"):
                number += 1
                while f"{letter}-{number:03d}" in taken:
                    number += 1
                row["id"] = f"{letter}-{number:03d}"
                taken.add(row["id"])
            items.append(row)
        self.row_forms[name] = kept
        return items

    def _post_clean(self) -> None:
        """The model's own field validation is replaced by the schema check in clean()."""

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None  # a ModelForm's clean() returns its cleaned_data
        parsed: dict[str, Any] = {}
        self.row_forms: dict[str, list[forms.Form]] = {}
        self.from_rows: set[str] = set()
        for name in JSON_FIELDS:
            raw = data.get(name) or ("{}" if name == "affordances" else "[]")
            try:
                parsed[name] = json.loads(raw)
            except json.JSONDecodeError as exc:
                # Still check the other sections, so every problem shows at once.
                self.add_error(name, f"not valid JSON: {exc}")
                parsed[name] = {} if name == "affordances" else []
        # Rows replace their section unless the expert changed that section's JSON.
        for name in ROW_SECTIONS:
            json_field = "affordances" if name == "invariants" else name
            if not self._rows_posted(name) or self._json_changed(json_field, data.get(json_field) or ""):
                continue
            items = self._rows(name)
            if items is None:
                self.add_error(None, f"{ROW_TITLES[name]}: correct the rows marked below.")
                continue
            self.from_rows.add(name)
            if name == "invariants":
                if not isinstance(parsed["affordances"], dict):
                    parsed["affordances"] = {}
                parsed["affordances"]["invariants"] = items
            else:
                parsed[name] = items
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
                if self._row_error(path, problem["message"]):
                    continue
                field = next((f for prefix, f in PATH_TO_FIELD if path.startswith(prefix)), None)
                self.add_error(field, f"{path}: {problem['message']}")
        return data

    def _row_error(self, path: str, message: str) -> bool:
        """Put a schema problem of a section edited as rows on its row and field."""
        found = re.match(r"^(decisions|open_questions|affordances\.invariants)\[(\d+)\](?:\.(\w+))?", path)
        if not found:
            return False
        name = "invariants" if found.group(1) == "affordances.invariants" else found.group(1)
        rows = getattr(self, "row_forms", {}).get(name, [])
        index = int(found.group(2))
        if name not in self.from_rows or index >= len(rows):
            return False
        form = rows[index]
        field = "text" if name == "invariants" else found.group(3)
        form.add_error(field if field in form.fields else None, message)
        self.add_error(None, f"{ROW_TITLES[name]}: correct the rows marked below.")
        return True


@admin.register(Medallion)
class MedallionAdmin(NoDjangoLogEntries, admin.ModelAdmin):
    form = MedallionForm
    list_display = ("__str__", "project", "status", "decision_count", "question_count", "schema_version",
                    "updated_at")
    list_filter = ("project", "status", "updated_at")
    list_select_related = ("project",)
    search_fields = ("search_text",)
    ordering = ("-updated_at",)
    actions = ["archive_selected"]
    readonly_fields = ("id", "project", "schema_version", "created_at", "updated_at", "model_info")
    change_form_template = "admin/medallions/medallion/change_form.html"
    # The rows (decisions, open questions, invariants) are drawn after "Summary" by the template;
    # the raw JSON of every section stays below for experts (a changed JSON section wins).
    fieldsets = [
        (None, {"fields": ("id", "status", "graph_nodes", "tags", "project", "schema_version", "created_at",
                           "updated_at", "model_info")}),
        ("Summary", {"fields": ("high_level", "subsystems")}),
        ("Raw JSON (for experts: a section changed here replaces its rows)", {
            "fields": ("decisions", "open_questions", "affordances"), "classes": ("collapse",)}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Medallion]:
        return super().get_queryset(request).defer("search_vector")

    @admin.display(description="decisions")
    def decision_count(self, obj: Medallion) -> int:
        return len(obj.decisions or [])

    @admin.display(description="open questions")
    def question_count(self, obj: Medallion) -> int:
        return len(obj.open_questions or [])

    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
                     ) -> HttpResponse:
        """The HISTORY button: Winni's revisions of this medallion, newest first, each diffed (on
        canonical JSON) against the version that followed it."""
        medallion = self.get_object(request, unquote(object_id))
        if medallion is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)  # type: ignore[attr-defined]  # Django's own not-found answer; private, so not in the stubs
        if not self.has_view_or_change_permission(request, medallion):
            raise PermissionDenied
        newer, newer_name = medallion.document(), "current version"
        entries = []
        for revision in services.medallion_history(medallion_id=medallion.pk):
            diff = difflib.unified_diff(canonical(revision.document).splitlines(), canonical(newer).splitlines(),
                                        fromfile=f"revision {revision.number}", tofile=newer_name, lineterm="", n=2)
            entries.append({"title": f"revision {revision.number}", "when": revision.created_at,
                            "who": revision.actor or "—", "what": revision.operation, "diff": "\n".join(diff)})
            newer, newer_name = revision.document, f"revision {revision.number}"
        return history_response(request, self, medallion, entries,
                                empty="No earlier versions: this medallion has not been changed since it was made.")

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


def history_response(request: HttpRequest, model_admin: Any, obj: Any, entries: list[dict[str, Any]],
                     empty: str) -> HttpResponse:
    """The admin's history page for Winni's own trail (revisions, audit rows) instead of Django's
    LogEntry table, which Winni's writes (services, API, MCP) never fill."""
    for entry in entries:
        entry["diff_lines"] = [{"kind": _diff_kind(line), "text": line} for line in entry.get("diff", "").splitlines()]
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"History: {obj}",
        "subtitle": None,
        "opts": model_admin.opts,
        "object": obj,
        "entries": entries,
        "empty": empty,
    }
    return TemplateResponse(request, "winni_admin/history.html", context)


def _diff_kind(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "diff-file"
    if line.startswith("@@"):
        return "diff-hunk"
    return {"+": "diff-add", "-": "diff-del"}.get(line[:1], "diff-context")
