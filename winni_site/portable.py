"""Export and import of the stores as JSON Lines: one file per store, one line per top-level row
with its owned rows nested (a conversation with its messages), plus `manifest.json`.

Format "winni-export" version 1 (documented in docs/operations.md, "Export format"):
- `manifest.json`: {"format": "winni-export", "version": 1, "created_at", "stores": {store:
  {"file", "version", "lines", "rows": {model: count}, "sha256"}}}
- `<store>.jsonl`: UTF-8, one JSON object per line, keys sorted, rows in primary-key order. A line
  holds the root row's fields by column name (`id`, foreign keys as `<name>_id`, date-times in
  ISO 8601, UUIDs as strings, vectors as lists of numbers; generated columns such as
  `search_vector` are left out) and, for each owned model, a list under its key
  (`"messages": [...]`) without the foreign key back to the root.

The export is deterministic, so exporting the same data twice gives byte-identical files and the
manifest's SHA-256 doubles as a content checksum. Import keeps ids, adds only rows whose id is not
there yet (re-importing adds nothing), and is atomic per file: any bad line rolls the whole file
back and the error names the file, the line and the field.

Adding a store is one `Portable(...)` line in STORES."""
from __future__ import annotations

import base64
import datetime as dt
import decimal
import hashlib
import json
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from django.apps import apps
from django.core.management.color import no_style
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from core import searchable
from core.errors import InvalidInput, NotFound
from core.logs import storage_op

FORMAT = "winni-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CHUNK = 500


@dataclass(frozen=True)
class Portable:
    store: str  # file <store>.jsonl
    model: str  # "app_label.Model" of the top-level rows
    children: dict[str, str] = field(default_factory=dict)  # line key → "app_label.Model" owned by the root
    version: int = 1  # bump when this store's line shape changes
    # "app_label.Model" → columns left out (links to rows that are not exported, e.g. jobs).
    omit: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def filename(self) -> str:
        return f"{self.store}.jsonl"


# Import runs in this order, so a row's foreign keys point at rows imported before it.
# A store whose models are not installed (yet) is skipped.
STORES: list[Portable] = [
    # First: every other store's rows may name a project.
    Portable("projects", "core.Project", {"keys": "core.ProjectKey"}),
    Portable("conversations", "conversations.Conversation", {"messages": "conversations.Message"}),
    Portable("digests", "conversations.SessionDigest"),
    Portable("fiedler_results", "conversations.FiedlerResult"),
    Portable("contexts", "contexts.StartupContext"),
    Portable("context_audit", "contexts.StartupContextAudit"),
    Portable("memories", "memory.Memory", {"versions": "memory.MemoryVersion"}),
    Portable("embedding_models", "memory.EmbeddingModel"),
    Portable("embeddings", "memory.Embedding"),
    Portable("cache_entries", "librarian.QueryMemory"),
    Portable("medallions", "medallions.Medallion", {"revisions": "medallions.MedallionRevision"},
             omit={"medallions.MedallionRevision": frozenset({"job_id"})}),
]
# Models of Winni's apps that are deliberately not exported: credentials, this installation's job
# and run history (automatic recall's injection log too, the judgments of its items' use, and the
# LLM calls' accounting: a budget is this installation's day), statistics derived from other rows. Anchors and project files are derived from the exported
# messages, memories and medallions (an import announces them, core.anchors reads them again);
# confirmations of possibly stale items are not carried over. Every other model must be in STORES
# (tests/winni_site/test_ops_export.py checks), so a new model forces a decision.
NOT_EXPORTED = {
    "winni_site.apitoken", "winni_site.backuprun", "medallions.medallionjob", "librarian.librarianhourlystats",
    "agents.injection", "core.itemuse", "core.anchor", "core.projectfile", "core.llmcall",
}


def model_exists(label: str) -> bool:
    try:
        apps.get_model(label)
        return True
    except LookupError:
        return False


def installed_stores() -> list[Portable]:
    """The stores whose models exist in this installation."""
    return [store for store in STORES if all(model_exists(label) for label in [store.model, *store.children.values()])]


# --- one row ⇄ one JSON object ----------------------------------------------------------------


def _columns(model: type[models.Model]) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields if not isinstance(f, models.GeneratedField)]


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (uuid.UUID, decimal.Decimal)):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if hasattr(value, "tolist"):  # numpy arrays and pgvector vectors
        return [float(x) for x in value.tolist()]
    if isinstance(value, (list, dict)):
        return value
    return str(value)


def row_to_json(obj: models.Model, *, skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    return {f.attname: _encode(getattr(obj, f.attname)) for f in _columns(type(obj)) if f.attname not in skip}


def _decode(model_field: models.Field, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(model_field, (models.BinaryField,)):
        return base64.b64decode(value)
    if isinstance(model_field, models.DurationField):
        return dt.timedelta(seconds=value)
    if isinstance(model_field, models.JSONField):
        return value
    if isinstance(model_field, models.ForeignKey):
        return model_field.target_field.to_python(value)
    return model_field.to_python(value)


def row_from_json(model: type[models.Model], data: dict[str, Any], *, fixed: dict[str, Any]) -> models.Model:
    columns = {f.attname: f for f in _columns(model)}
    unknown = sorted(set(data) - set(columns))
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r} for {model._meta.label_lower}", field=unknown[0])
    values = {}
    for name, value in data.items():
        try:
            values[name] = _decode(columns[name], value)
        except Exception as exc:  # Django's to_python raises ValidationError, others ValueError
            raise InvalidInput(f"{name}: {exc}", field=name) from None
    if model._meta.pk.attname not in values:
        raise InvalidInput(f"{model._meta.pk.attname} is required", field=model._meta.pk.attname)
    return model(**values, **fixed)


def _fk_to(child: type[models.Model], parent: type[models.Model]) -> models.ForeignKey:
    for f in child._meta.concrete_fields:
        if isinstance(f, models.ForeignKey) and f.related_model is parent:
            return f
    raise LookupError(f"{child._meta.label} has no foreign key to {parent._meta.label}")


# --- export ---------------------------------------------------------------------------------------


def _lines(store: Portable, rows: dict[str, int]) -> Iterator[str]:
    root = apps.get_model(store.model)
    kids = {key: apps.get_model(label) for key, label in store.children.items()}
    fks = {key: _fk_to(model, root) for key, model in kids.items()}
    pks = list(root.objects.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(pks), CHUNK):
        chunk = pks[start : start + CHUNK]
        owned: dict[str, dict[Any, list[dict[str, Any]]]] = {}
        for key, model in kids.items():
            owned[key] = {}
            for child in model.objects.filter(**{f"{fks[key].attname}__in": chunk}).order_by("pk"):
                skip = store.omit.get(model._meta.label, frozenset()) | {fks[key].attname}
                owned[key].setdefault(getattr(child, fks[key].attname), []).append(row_to_json(child, skip=skip))
                rows[model._meta.label_lower] += 1
        for obj in root.objects.filter(pk__in=chunk).order_by("pk"):
            line = row_to_json(obj, skip=store.omit.get(root._meta.label, frozenset()))
            for key in kids:
                line[key] = owned[key].get(obj.pk, [])
            rows[root._meta.label_lower] += 1
            yield json.dumps(line, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def export_all(*, out: Path, stores: list[str] | None = None, progress: Callable[[str, int], Any] | None = None
               ) -> dict[str, Any]:
    """Write every (or the named) store to `out` as JSONL plus manifest.json. Returns the manifest."""
    chosen = _choose(stores)
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "format": FORMAT, "version": FORMAT_VERSION, "created_at": timezone.now().isoformat(), "stores": {},
    }
    # One snapshot for every file: a conversation and its messages are read as of one moment.
    outermost = not connection.in_atomic_block
    with storage_op("export.all", out=str(out)) as log, transaction.atomic():
        if outermost:
            connection.cursor().execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        for store in chosen:
            root = apps.get_model(store.model)
            rows = {root._meta.label_lower: 0, **{apps.get_model(m)._meta.label_lower: 0 for m in store.children.values()}}
            digest = hashlib.sha256()
            lines = 0
            tmp = out / f".{store.filename}.tmp"
            with open(tmp, "w", encoding="utf-8") as handle:
                for line in _lines(store, rows):
                    data = line + "\n"
                    handle.write(data)
                    digest.update(data.encode("utf-8"))
                    lines += 1
                    if progress:
                        progress(store.store, lines)
            tmp.replace(out / store.filename)
            manifest["stores"][store.store] = {
                "file": store.filename, "version": store.version, "lines": lines, "rows": rows,
                "sha256": digest.hexdigest(),
            }
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        log["stores"] = len(chosen)
    return manifest


def _choose(stores: list[str] | None) -> list[Portable]:
    available = installed_stores()
    if not stores:
        return available
    names = {store.store for store in available}
    unknown = [name for name in stores if name not in names]
    if unknown:
        raise InvalidInput(f"unknown store {unknown[0]!r}; known: {', '.join(sorted(names))}", field="store")
    return [store for store in available if store.store in stores]


# --- import ---------------------------------------------------------------------------------------


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.exists():
        raise NotFound(f"{folder} has no {MANIFEST}: not a winni export", field="path")
    try:
        manifest = json.loads(path.read_text())
    except ValueError as exc:
        raise InvalidInput(f"{path} is not JSON: {exc}", field="path") from None
    if manifest.get("format") != FORMAT:
        raise InvalidInput(f"{path} is not a {FORMAT} manifest", field="path")
    if manifest.get("version") != FORMAT_VERSION:
        raise InvalidInput(
            f"{path} is format version {manifest.get('version')}; this Winni reads version {FORMAT_VERSION}",
            field="path",
        )
    return manifest


@contextmanager
def _keep_timestamps(model: type[models.Model]) -> Iterator[None]:
    """auto_now / auto_now_add would stamp imported rows with the import time; an import keeps
    the exported times instead."""
    stamped = [f for f in model._meta.concrete_fields
               if isinstance(f, (models.DateField, models.TimeField)) and (f.auto_now or f.auto_now_add)]
    saved = [(f, f.auto_now, f.auto_now_add) for f in stamped]
    for f in stamped:
        f.auto_now = f.auto_now_add = False
    try:
        yield
    finally:
        for f, auto_now, auto_now_add in saved:
            f.auto_now, f.auto_now_add = auto_now, auto_now_add


def _insert_new(model: type[models.Model], objs: list[tuple[int, models.Model]], filename: str) -> list[Any]:
    """Insert the objects whose primary key is not there yet; returns the added primary keys."""
    if not objs:
        return []
    existing = set(model._default_manager.filter(pk__in=[o.pk for _, o in objs]).values_list("pk", flat=True))
    fresh = [(n, o) for n, o in objs if o.pk not in existing]
    with _keep_timestamps(model):
        try:
            with transaction.atomic():
                model._default_manager.bulk_create([o for _, o in fresh])
        except IntegrityError:
            # Find the line that breaks a constraint, to name it.
            for number, obj in fresh:
                try:
                    with transaction.atomic():
                        obj.save(force_insert=True)
                except IntegrityError as exc:
                    raise InvalidInput(f"{filename} line {number}: {str(exc).splitlines()[0]}", field=filename) from None
            raise
    return [o.pk for _, o in fresh]


def import_store(*, folder: Path, store: Portable, manifest: dict[str, Any],
                 progress: Callable[[str, int], Any] | None = None) -> dict[str, int]:
    """Import one store's file in one transaction; returns rows added per model."""
    entry = manifest["stores"][store.store]
    path = folder / entry["file"]
    if entry.get("version") != store.version:
        raise InvalidInput(
            f"{entry['file']} is {store.store} version {entry.get('version')}; this Winni reads version {store.version}",
            field=entry["file"],
        )
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        raise InvalidInput(f"{entry['file']}: checksum does not match manifest.json", field=entry["file"])
    root = apps.get_model(store.model)
    kids = {key: apps.get_model(label) for key, label in store.children.items()}
    fks = {key: _fk_to(model, root) for key, model in kids.items()}
    added: dict[type[models.Model], list[Any]] = {model: [] for model in [root, *kids.values()]}

    with storage_op("import.store", store=store.store) as log, transaction.atomic():
        pending: list[tuple[int, dict[str, Any]]] = []

        def flush() -> None:
            roots = []
            owned: dict[str, list[tuple[int, models.Model]]] = {key: [] for key in kids}
            for number, line in pending:
                try:
                    nested = {key: line.pop(key, []) for key in kids}
                    obj = row_from_json(root, line, fixed={})
                    roots.append((number, obj))
                    for key, rows in nested.items():
                        if not isinstance(rows, list):
                            raise InvalidInput(f"{key} must be a list", field=key)
                        for row in rows:
                            if not isinstance(row, dict):
                                raise InvalidInput(f"{key} items must be objects", field=key)
                            owned[key].append((number, row_from_json(kids[key], row, fixed={fks[key].attname: obj.pk})))
                except InvalidInput as exc:
                    raise InvalidInput(f"{entry['file']} line {number}: {exc.message}", field=exc.field) from None
            added[root] += _insert_new(root, roots, entry["file"])
            for key, model in kids.items():
                added[model] += _insert_new(model, owned[key], entry["file"])
            pending.clear()

        for number, raw in enumerate(data.decode("utf-8").splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError as exc:
                raise InvalidInput(f"{entry['file']} line {number}: not JSON ({exc})", field=entry["file"]) from None
            if not isinstance(line, dict):
                raise InvalidInput(f"{entry['file']} line {number}: not a JSON object", field=entry["file"])
            pending.append((number, line))
            if len(pending) >= CHUNK:
                flush()
            if progress:
                progress(store.store, number)
        flush()
        _reset_sequences([root, *kids.values()])
        for model, pks in added.items():
            _announce_imported(model, pks)
        log["added"] = sum(len(pks) for pks in added.values())
    return {model._meta.label_lower: len(pks) for model, pks in added.items()}


def _reset_sequences(model_list: list[type[models.Model]]) -> None:
    """Integer ids were kept: move their sequences past the imported ids."""
    statements = connection.ops.sequence_reset_sql(no_style(), model_list)
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def _announce_imported(model: type[models.Model], pks: list[Any]) -> None:
    """Imported rows of a searchable kind go to the embedding pipeline like any new row."""
    for kind in searchable.kinds():
        if pks and searchable.get(kind).model is model:
            searchable.announce_changed(kind, pks)


def import_all(*, folder: Path, stores: list[str] | None = None,
               progress: Callable[[str, int], Any] | None = None) -> dict[str, dict[str, int]]:
    """Import every store file present in an export folder (in dependency order)."""
    manifest = read_manifest(folder)
    chosen = _choose(stores)
    known = {store.store for store in STORES}
    unknown = sorted(set(manifest["stores"]) - known)
    if unknown:
        raise InvalidInput(f"the export has stores this Winni does not know: {', '.join(unknown)}", field="path")
    report = {}
    for store in chosen:
        if store.store in manifest["stores"]:
            report[store.store] = import_store(folder=folder, store=store, manifest=manifest, progress=progress)
    return report
