"""Medallions: the business rules every interface (MCP, REST, admin, Celery, the client's
server-side store) calls.

Scope matching (SPEC §6, seed 004 FR-010): a medallion matches a requested scope when the
requested graph nodes are a subset of its nodes and the requested tags a subset of its tags; an
empty requested list matches everything on that axis, so an empty scope matches every medallion.
Results are ordered by `updated_at`, newest first.

Projects: a scope node or tag `repo:<name>` names a project (its slug, name or alias); every write
links the medallion to that project (Medallion.project), so a project's medallions are found by
project even after it was renamed or merged. A `repo:` name that matches no project links nothing."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
import uuid
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.template.loader import render_to_string
from django.utils import timezone
from pydantic import ValidationError

from core import projects
from core.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge
from core.logs import storage_log, storage_op
from core.models import Project
from core.redaction import redact, redact_json
from core.searchable import announce_changed
from core.validation import parse_uuid, validate_limit
from medallions import schema
from medallions.extractive import decision_statement as decision_statement
from medallions.llm import Evidence, MedallionLLM, MedallionLLMError, provider_from_settings
from medallions.models import JobStatus, Medallion, MedallionJob, MedallionRevision, Status

SCOPE_NOT_OBJECT = "must be an object with graph_nodes and tags (lists of strings)"
SCOPE_EMPTY = "must name at least one graph node or tag: a checkpoint needs a scope"
EVIDENCE_NOT_OBJECT = "evidence must be an object with session_summary, transcripts, artefacts or conversation_id"
LIMIT_RANGE = "limit must be an integer from 1 to 100"
WAIT_RANGE = "wait_seconds must be an integer from 0 to 120"
MAX_WAIT_SECONDS = 120
EVIDENCE_KEYS = ("session_summary", "transcripts", "artefacts", "conversation_id")
SECTIONS = ("summary", "decisions", "open_questions", "affordances")


def invariant_id(medallion_id: Any, invariant: Any) -> str:
    """An invariant's item id (automatic recall's and core.anchors' key): invariants have no id of
    their own, so their text's hash is it."""
    return f"{medallion_id}:inv-{hashlib.sha256(str(invariant).encode()).hexdigest()[:10]}"


def failure_message(*, scope: dict[str, list[str]], operation: str, cause: str) -> str:
    return f"{operation} of the medallion for scope {json.dumps(scope)} failed: {cause}"


class CheckpointFailed(Exception):
    """A checkpoint could not be completed; nothing was stored."""

    def __init__(self, *, scope: dict[str, list[str]], operation: str, cause: str) -> None:
        self.scope, self.operation, self.cause = scope, operation, cause
        super().__init__(failure_message(scope=scope, operation=operation, cause=cause))


# --- validation --------------------------------------------------------------------------------


def parse_id(value: Any, *, field: str, what: str) -> uuid.UUID:
    """An unknown or malformed id is the same thing to a caller: not found."""
    try:
        return parse_uuid(value, field=field)
    except InvalidInput:
        raise NotFound(f"{what} {str(value)[:80]!r} not found ({field} must be a UUID)", field=field) from None


def validate_scope(value: Any, *, field: str = "scope", required: bool = False) -> dict[str, list[str]]:
    """{"graph_nodes": [...], "tags": [...]} with strings only; repeats dropped, order kept."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{field}: {SCOPE_NOT_OBJECT}", field=field)
    unknown = sorted(set(value) - {"graph_nodes", "tags"})
    if unknown:
        raise InvalidInput(f"{field}.{unknown[0]}: unknown key (the scope {SCOPE_NOT_OBJECT})", field=f"{field}.{unknown[0]}")
    scope: dict[str, list[str]] = {}
    for axis in ("graph_nodes", "tags"):
        items = value.get(axis)
        items = [] if items is None else items
        if not isinstance(items, list):
            raise InvalidInput(f"{field}.{axis} must be a list of strings", field=f"{field}.{axis}")
        if len(items) > schema.MAX_SCOPE_ITEMS:
            raise InvalidInput(f"{field}.{axis} may hold at most {schema.MAX_SCOPE_ITEMS} items",
                               field=f"{field}.{axis}")
        for index, item in enumerate(items):
            if not isinstance(item, str) or not item.strip() or len(item) > schema.MAX_SCOPE_ITEM_CHARS:
                path = f"{field}.{axis}[{index}]"
                raise InvalidInput(
                    f"{path} must be a non-empty string of at most {schema.MAX_SCOPE_ITEM_CHARS} characters, "
                    f"got {json.dumps(item)[:60]}", field=path)
        # Redacted like any text (a `[REDACTED:<type>]` longer than a short secret is cut to the limit).
        scope[axis] = list(dict.fromkeys(str(redact(item.strip(), field=f"{field}.{axis}"))[:schema.MAX_SCOPE_ITEM_CHARS]
                                         for item in items))
    if required and not (scope["graph_nodes"] or scope["tags"]):
        raise InvalidInput(f"{field}: {SCOPE_EMPTY}", field=field)
    return scope


def _first_schema_error(exc: ValidationError, prefix: str = "") -> InvalidInput:
    problems = schema.error_list(exc)
    path, message = problems[0]
    path = f"{prefix}{path}" if prefix and path != "(root)" else (prefix.rstrip(".") or path)
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    return InvalidInput(f"{path}: {message}{more}", field=path,
                        extra={"problems": [{"path": f"{prefix}{p}", "message": m} for p, m in problems]})


def validate_document(document: Any, *, existing: Medallion | None = None) -> schema.Medallion:
    """The full schema check, naming the JSON path of the first problem. `meta` may be partial or
    left out: the server owns ids, timestamps and the schema version."""
    if not isinstance(document, dict):
        raise InvalidInput("medallion must be a JSON object with scope, summary, decisions, open_questions, "
                           "affordances (and optionally meta)", field="medallion")
    size = len(json.dumps(document, default=str).encode("utf-8"))
    if size > settings.WINNI_MAX_CONTENT_BYTES:
        raise PayloadTooLarge(f"medallion is {size} bytes; the limit is {settings.WINNI_MAX_CONTENT_BYTES} bytes "
                              "(WINNI_MAX_CONTENT_BYTES)", field="medallion")
    meta = document.get("meta")
    meta = {} if meta is None else meta
    if not isinstance(meta, dict):
        raise InvalidInput("meta must be an object", field="meta")
    if existing and meta.get("id") not in (None, ""):
        # On an update the path names the medallion; a given meta.id is only checked for its form.
        try:
            uuid.UUID(str(meta["id"]))
        except ValueError:
            raise InvalidInput("meta.id must be a UUID", field="meta.id") from None
    now = timezone.now()
    # Secrets and `<private>` spans in the content go before anything is stored (core.redaction).
    full = {
        **{key: redact_json(value, field=key) if key in SECTIONS else value for key, value in document.items()},
        "meta": {
            "id": str(existing.id) if existing else str(meta.get("id") or uuid.uuid4()),
            "schema_version": schema.SCHEMA_VERSION,
            "created_at": existing.created_at if existing else now,
            "updated_at": now,
            "status": meta.get("status", existing.status if existing else Status.ACTIVE),
            "model_info": redact_json(meta.get("model_info", existing.model_info if existing and existing.model_info else {}),
                                      field="meta.model_info"),
        },
    }
    for key in ("id", "schema_version", "created_at", "updated_at"):
        if key in meta and not isinstance(meta[key], (str, type(None))):
            raise InvalidInput(f"meta.{key} must be a string", field=f"meta.{key}")
    try:
        parsed = schema.Medallion.model_validate(full)
    except ValidationError as exc:
        raise _first_schema_error(exc) from None
    try:
        uuid.UUID(parsed.meta.id)
    except ValueError:
        raise InvalidInput("meta.id must be a UUID", field="meta.id") from None
    scope = validate_scope(parsed.scope.model_dump())
    parsed.scope = schema.Scope(**scope)
    return parsed


# Decisions that still hold: a superseded or rejected one is kept in the document but is neither
# searched nor shown to a new session (recall's rule for whatever no longer holds).
CURRENT_DECISIONS = ("active", "proposed")


def search_text(medallion: Medallion) -> str:
    """Summary, current decisions and questions as one text: indexed for full-text search and
    embedded."""
    summary = medallion.summary or {}
    parts = [*medallion.graph_nodes, *medallion.tags, summary.get("high_level", "")]
    parts += [f"{s.get('name', '')}: {s.get('notes', '')}" for s in summary.get("subsystems", [])]
    parts += [f"{d.get('statement', '')} {d.get('rationale', '')}" for d in medallion.decisions or []
              if d.get("status", "active") in CURRENT_DECISIONS]
    parts += [f"{q.get('question', '')} {q.get('blocked_on', '')}" for q in medallion.open_questions or []]
    return "\n".join(part.strip() for part in parts if part and part.strip())


REPO_PREFIX = "repo:"


def scope_project(scope: dict[str, list[str]]) -> Project | None:
    """The project a scope names with `repo:<name>` (tags first, then graph nodes); None when it
    names none that exists."""
    for item in [*scope.get("tags", []), *scope.get("graph_nodes", [])]:
        if item.startswith(REPO_PREFIX) and item[len(REPO_PREFIX):].strip():
            found = projects.project_find(item[len(REPO_PREFIX):].strip())
            if found is not None:
                return found
    return None


def _apply(medallion: Medallion, parsed: schema.Medallion) -> None:
    data = parsed.model_dump(mode="json")
    medallion.schema_version = schema.SCHEMA_VERSION
    medallion.status = data["meta"]["status"]
    medallion.model_info = data["meta"]["model_info"]
    medallion.graph_nodes = data["scope"]["graph_nodes"]
    medallion.tags = data["scope"]["tags"]
    medallion.project = scope_project(data["scope"])
    projects.require_visible(medallion.project, field="scope")  # a token limited to projects
    for section in SECTIONS:
        setattr(medallion, section, data[section])
    medallion.updated_at = parsed.meta.updated_at
    medallion.search_text = search_text(medallion)
    projects.project_touch(medallion.project_id)


# --- store: create, update, get, latest for scope ---------------------------------------------


def medallion_create(*, document: dict[str, Any], actor: str = "") -> Medallion:
    parsed = validate_document(document)
    with storage_op("medallion.create", actor=actor) as log, transaction.atomic():
        if Medallion.objects.filter(pk=parsed.meta.id).exists():
            raise Conflict(f"meta.id {parsed.meta.id} already exists; update it instead", field="meta.id")
        medallion = Medallion(id=uuid.UUID(parsed.meta.id), created_at=parsed.meta.created_at)
        _apply(medallion, parsed)
        medallion.save(force_insert=True)
        announce_changed("medallion", [medallion.id])
        log["medallion_id"] = str(medallion.id)
    return medallion


def _lock(medallion_id: Any) -> Medallion:
    """Fetch and lock the row; must run inside a transaction."""
    pk = parse_id(medallion_id, field="medallion_id", what="medallion")
    medallion = projects.scope_queryset(Medallion.objects.select_for_update(), None).filter(pk=pk).first()
    if medallion is None:
        raise NotFound(f"medallion {pk} not found", field="medallion_id")
    return medallion


def _keep_revision(medallion: Medallion, *, actor: str, operation: str, job: MedallionJob | None) -> None:
    """The caller holds the row lock, so revision numbers cannot collide."""
    last = medallion.revisions.order_by("-number").values_list("number", flat=True).first()
    MedallionRevision.objects.create(
        medallion=medallion, number=(last or 0) + 1, document=medallion.document(),
        actor=actor, operation=operation, job=job,
    )


def medallion_update(*, medallion_id: Any, document: dict[str, Any], actor: str = "",
                     job: MedallionJob | None = None, operation: str = "update") -> Medallion:
    """Replace a medallion's scope and sections (last write wins); the previous version is kept
    as a revision. `created_at` stays, `updated_at` is now."""
    with storage_op("medallion.update", actor=actor, medallion_id=str(medallion_id)) as log, transaction.atomic():
        medallion = _lock(medallion_id)
        parsed = validate_document(document, existing=medallion)
        _keep_revision(medallion, actor=actor, operation=operation, job=job)
        _apply(medallion, parsed)
        medallion.save()
        announce_changed("medallion", [medallion.id])
        log["status"] = medallion.status
    return medallion


def medallion_archive(*, medallion_id: Any, actor: str = "") -> Medallion:
    document = medallion_get(medallion_id=medallion_id).document()
    document["meta"]["status"] = Status.ARCHIVED
    return medallion_update(medallion_id=medallion_id, document=document, actor=actor, operation="archive")


def medallion_get(*, medallion_id: Any) -> Medallion:
    pk = parse_id(medallion_id, field="medallion_id", what="medallion")
    with storage_op("medallion.get", medallion_id=str(pk)):
        medallion = projects.scope_queryset(Medallion.objects.defer("search_vector"), None).filter(pk=pk).first()
    if medallion is None:
        raise NotFound(f"medallion {pk} not found", field="medallion_id")
    return medallion


def medallions_latest_for_scope(*, scope: dict[str, Any], limit: int = 3, status: str | None = Status.ACTIVE,
                                offset: int = 0, project: Any = None) -> list[Medallion]:
    """The newest medallions matching `scope` (subset semantics, see the module docstring).
    `status=None` returns every status. `project`: only that project's (a name matching no
    project: none)."""
    scope = validate_scope(scope)
    limit = validate_limit(limit)
    if status is not None and status not in Status.values:
        raise InvalidInput(f"status must be one of {', '.join(Status.values)}, got {str(status)[:20]!r}",
                           field="status")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInput("offset must be an integer of at least 0", field="offset")
    with storage_op("medallion.latest_for_scope", **scope) as log:
        qs = projects.scope_queryset(Medallion.objects.for_scope(**scope).defer("search_vector"), project)
        if status is not None:
            qs = qs.filter(status=status)
        found = list(qs.order_by("-updated_at", "-created_at")[offset : offset + limit])
        log["found"] = len(found)
    return found


def medallions_active_for_project(*, project: Project, limit: int = 3) -> list[Medallion]:
    """The project's newest active medallions (its own only, not the global ones: the one rule of
    core.projects.search_scope), newest first."""
    rows = projects.search_scope(project, model=Medallion).apply(Medallion.objects.filter(status=Status.ACTIVE))
    return list(rows.defer("search_vector").order_by("-updated_at")[:limit])


def load_medallions_for_scope(*, scope: dict[str, Any], limit: int = 3, project: Any = None) -> list[Medallion]:
    """Seed 004's session-start helper: the latest active medallions for a scope (of `project`)."""
    return medallions_latest_for_scope(scope=scope, limit=limit, project=project)


def medallion_history(*, medallion_id: Any) -> list[MedallionRevision]:
    """Previous versions, newest first."""
    medallion = medallion_get(medallion_id=medallion_id)
    return list(medallion.revisions.order_by("-number"))


def medallion_as_text(medallion: Medallion) -> str:
    """Compact markdown for a new session's context (Claude Code's SessionStart)."""
    summary = medallion.summary or {}
    title = ", ".join([*medallion.graph_nodes, *(f"#{t}" for t in medallion.tags)]) or str(medallion.id)
    decisions = [d for d in medallion.decisions or [] if d.get("status", "active") in CURRENT_DECISIONS]
    return render_to_string("medallions/as_text.md", {
        "title": title,
        "updated": medallion.updated_at.strftime("%Y-%m-%d %H:%M UTC"),
        "high_level": summary.get("high_level", ""),
        "subsystems": summary.get("subsystems", []),
        "decisions": decisions,
        "questions": medallion.open_questions or [],
        "affordances": medallion.affordances or {},
    }).strip() + "\n"


# --- evidence ----------------------------------------------------------------------------------


def _as_text(item: Any, *, field: str) -> str:
    """A transcript segment or artefact: a string, a message {role, content}, a list of messages,
    or any object (rendered as `key: value` lines)."""
    if isinstance(item, str):
        return item
    if isinstance(item, list):
        return "\n".join(_as_text(part, field=f"{field}[{index}]") for index, part in enumerate(item))
    if isinstance(item, dict):
        if "content" in item and "role" in item:
            return f"{item['role']}: {_as_text(item['content'], field=f'{field}.content')}"
        lines = [f"{key}: {value if isinstance(value, str) else json.dumps(value, default=str)}"
                 for key, value in item.items() if key != "content"]
        if "content" in item:
            lines.append(_as_text(item["content"], field=f"{field}.content"))
        return "\n".join(lines)
    if isinstance(item, (int, float, bool)) or item is None:
        return json.dumps(item)
    raise InvalidInput(f"{field} must be text, an object or a list", field=field)


def validate_evidence(value: Any) -> dict[str, Any]:
    """The evidence as stored on a job: {session_summary, transcripts[], artefacts[], conversation_id}."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput(f"evidence: {EVIDENCE_NOT_OBJECT}", field="evidence")
    unknown = sorted(set(value) - set(EVIDENCE_KEYS))
    if unknown:
        raise InvalidInput(f"evidence.{unknown[0]}: unknown key ({EVIDENCE_NOT_OBJECT})",
                           field=f"evidence.{unknown[0]}")
    size = len(json.dumps(value, default=str).encode("utf-8"))
    if size > settings.WINNI_MAX_REQUEST_BYTES:
        raise PayloadTooLarge(f"evidence is {size} bytes; the limit is {settings.WINNI_MAX_REQUEST_BYTES} bytes "
                              "(WINNI_MAX_REQUEST_BYTES)", field="evidence")
    summary = value.get("session_summary")
    summary = "" if summary is None else summary
    if not isinstance(summary, str):
        raise InvalidInput("evidence.session_summary must be a string", field="evidence.session_summary")
    clean: dict[str, Any] = {"session_summary": summary}
    for key in ("transcripts", "artefacts"):
        items = value.get(key)
        items = [] if items is None else items
        if not isinstance(items, list):
            raise InvalidInput(f"evidence.{key} must be a list", field=f"evidence.{key}")
        clean[key] = [_as_text(item, field=f"evidence.{key}[{i}]") for i, item in enumerate(items)]
    conversation_id = value.get("conversation_id")
    if conversation_id is not None:
        # Read now so an unknown id is refused at once; the worker reads it again, fresh.
        _conversation_evidence(conversation_id)
        clean["conversation_id"] = str(conversation_id)
    # The evidence is stored on the job: secrets and `<private>` spans go first (core.redaction).
    return {**clean, **redact_json({key: clean[key] for key in ("session_summary", "transcripts", "artefacts")},
                                   field="evidence")}


def _conversation_evidence(conversation_id: Any) -> tuple[str, list[str]]:
    """The conversation's transcript and the roots its paths are named relative to."""
    from conversations.services import conversation_get, conversation_roots

    conversation, messages = conversation_get(conversation_id=conversation_id)
    transcript = "\n".join(f"{message.role}: {message.content}" for message in messages)
    return transcript, conversation_roots(conversation)


def evidence_for_llm(evidence: dict[str, Any], *, scope: dict[str, Any] | None = None) -> Evidence:
    """The writer's evidence, with the project's roots: the conversation's (conversation_roots)
    and the scope's project's. A writer names paths under them relative to them
    (core.paths.project_path)."""
    transcripts = list(evidence.get("transcripts", []))
    roots: list[str] = []
    if evidence.get("conversation_id"):
        transcript, roots = _conversation_evidence(evidence["conversation_id"])
        transcripts.append(transcript)
    if scope is not None:
        roots += projects.project_roots([scope_project(scope)])
    return Evidence(evidence.get("session_summary", ""), transcripts, list(evidence.get("artefacts", [])),
                    roots=list(dict.fromkeys(roots)))


# --- checkpoint_session and its jobs -----------------------------------------------------------


def _scope_lock(scope: dict[str, list[str]]) -> None:
    """Serialise writers of one exact scope (two first checkpoints must not make two medallions)."""
    key = json.dumps([sorted(scope["graph_nodes"]), sorted(scope["tags"])])
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])


def _active_for_exact_scope(scope: dict[str, list[str]]) -> Medallion | None:
    return (Medallion.objects.exact_scope(**scope).filter(status=Status.ACTIVE)
            .order_by("-updated_at").first())


def checkpoint_session(*, scope: dict[str, Any], evidence: dict[str, Any], llm: MedallionLLM | None = None,
                       actor: str = "", job: MedallionJob | None = None) -> Medallion:
    """Update the active medallion for exactly this scope, or generate a new one (seed 004 FR-006).

    The LLM runs outside any transaction; its result is validated and written in one transaction.
    On any failure nothing is stored and CheckpointFailed names scope, operation and cause."""
    scope = validate_scope(scope, required=True)
    llm = llm or provider_from_settings()
    existing = _active_for_exact_scope(scope)
    operation = "update" if existing else "generate"
    if job is not None:
        MedallionJob.objects.filter(pk=job.pk).update(operation=operation, provider=llm.provider)
    try:
        material = evidence_for_llm(evidence, scope=scope)
        if existing:
            content = llm.update(existing.document(), material)
        else:
            content = llm.generate(scope, material)
        content = schema.Content.model_validate(content.model_dump())
    except (MedallionLLMError, ValidationError, InvalidInput, NotFound) as exc:
        raise CheckpointFailed(scope=scope, operation=operation, cause=str(exc)) from exc
    document = {**content.model_dump(mode="json"), "scope": scope,
                "meta": {"status": Status.ACTIVE, "model_info": {"provider": llm.provider, "model": llm.model}}}
    try:
        with transaction.atomic():
            _scope_lock(scope)
            # Another checkpoint may have written meanwhile: last write wins, its version stays a revision.
            current = _active_for_exact_scope(scope)
            if current is None:
                return medallion_create(document=document, actor=actor)
            return medallion_update(medallion_id=current.id, document=document, actor=actor, job=job,
                                    operation=f"checkpoint:{operation}")
    except (InvalidInput, PayloadTooLarge) as exc:
        raise CheckpointFailed(scope=scope, operation=operation, cause=exc.message) from exc


def medallion_job_create(*, scope: Any, evidence: Any, actor: str = "") -> MedallionJob:
    """Validate, record a pending job and queue it for the worker once committed."""
    from medallions.tasks import medallion_job_run as run_task

    scope = validate_scope(scope, required=True)
    projects.require_visible(scope_project(scope), field="scope")  # a token limited to projects
    clean = validate_evidence(evidence)
    with storage_op("medallion.job_create", actor=actor) as log, transaction.atomic():
        job = MedallionJob.objects.create(graph_nodes=scope["graph_nodes"], tags=scope["tags"],
                                          evidence=clean, actor=actor,
                                          provider=settings.WINNI_MEDALLION_LLM_PROVIDER)
        log["job_id"] = str(job.id)
        job_id = str(job.id)
        transaction.on_commit(lambda: run_task.delay(job_id))
    return job


def medallion_jobs_requeue(*, older_than_seconds: float = 0) -> int:
    """Queue again the jobs still pending (or orphaned while running: _may_run) that were created
    more than `older_than_seconds` ago; returns how many. A queued job lives in Redis until a
    worker takes it: stopping Winni (the embedded Redis keeps nothing) or losing the worker before
    it acknowledged the task left the job pending for ever, and a session's end without its
    checkpoint. Queuing a job twice is harmless: a run takes the row's lock and runs only a job
    that may run."""
    from medallions.tasks import medallion_job_run as run_task

    since = timezone.now() - dt.timedelta(seconds=older_than_seconds)
    waiting = MedallionJob.objects.filter(status__in=(JobStatus.PENDING, JobStatus.RUNNING), created_at__lte=since)
    job_ids = [str(job.id) for job in waiting.order_by("created_at") if _may_run(job)]
    with storage_op("medallion.jobs_requeue", older_than_seconds=older_than_seconds) as log:
        for job_id in job_ids:
            run_task.delay(job_id)
        log["requeued"] = len(job_ids)
    return len(job_ids)


def medallion_job_get(*, job_id: Any) -> MedallionJob:
    pk = parse_id(job_id, field="job_id", what="job")
    job = MedallionJob.objects.select_related("medallion").filter(pk=pk).first()
    if job is not None and not projects.project_visible(scope_project({"tags": job.tags, "graph_nodes": job.graph_nodes})):
        job = None  # another project's, for a token limited to projects
    if job is None:
        raise NotFound(f"job {pk} not found", field="job_id")
    return job


def medallion_job_run(*, job_id: Any, llm: MedallionLLM | None = None) -> MedallionJob:
    """The worker's side: pending → running → done (with the medallion) or failed (with the cause)."""
    with transaction.atomic():
        job = MedallionJob.objects.select_for_update().filter(pk=parse_id(job_id, field="job_id", what="job")).first()
        if job is None:
            raise NotFound(f"job {job_id} not found", field="job_id")
        if not _may_run(job):
            return job  # delivered twice (acks_late) while the first run is alive: it owns the job
        job.status, job.started_at = JobStatus.RUNNING, timezone.now()
        job.save(update_fields=["status", "started_at"])
    with storage_op("medallion.job_run", job_id=str(job.id)) as log:
        try:
            medallion = checkpoint_session(scope=job.scope, evidence=job.evidence, llm=llm, actor=job.actor, job=job)
        except CheckpointFailed as exc:
            job.status, job.operation, job.error = JobStatus.FAILED, exc.operation, str(redact(exc.cause, field="error"))
        except Exception as exc:
            # Anything unexpected (a lost database connection...) must not leave the job "running".
            operation = MedallionJob.objects.values_list("operation", flat=True).get(pk=job.pk) or "checkpoint"
            job.status, job.operation = JobStatus.FAILED, operation
            job.error = str(redact(f"internal error: {type(exc).__name__}: {exc}", field="error"))
            storage_log.exception("medallion job %s failed", job.id)
        else:
            job.status, job.medallion = JobStatus.DONE, medallion
            job.operation = MedallionJob.objects.values_list("operation", flat=True).get(pk=job.pk)
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "operation", "error", "medallion", "finished_at"])
        log.update(status=job.status, operation=job.operation)
    return job


def _may_run(job: MedallionJob) -> bool:
    """Pending jobs run; a job still "running" long after any model call could have ended was
    orphaned by a worker that died, and runs again when Celery redelivers it."""
    if job.status == JobStatus.PENDING:
        return True
    stale_after = dt.timedelta(seconds=2 * settings.WINNI_MEDALLION_LLM_TIMEOUT_SECONDS + 60)
    return job.status == JobStatus.RUNNING and job.started_at is not None and (
        timezone.now() - job.started_at > stale_after)


def medallion_job_wait(*, job_id: Any, wait_seconds: float) -> MedallionJob:
    """The job once finished, or as it is when `wait_seconds` have passed."""
    deadline = time.monotonic() + wait_seconds
    delay = 0.05
    while True:
        job = medallion_job_get(job_id=job_id)
        if job.status in (JobStatus.DONE, JobStatus.FAILED) or time.monotonic() >= deadline:
            return job
        time.sleep(min(delay, max(deadline - time.monotonic(), 0)))
        delay = min(delay * 2, 0.5)


def medallion_checkpoint(*, scope: Any, evidence: Any, wait_seconds: Any = 0, actor: str = "") -> MedallionJob:
    """checkpoint_session as a background job: returns at once, or waits up to `wait_seconds`."""
    if isinstance(wait_seconds, bool) or not isinstance(wait_seconds, int) or not 0 <= wait_seconds <= MAX_WAIT_SECONDS:
        raise InvalidInput(f"{WAIT_RANGE}, got {str(wait_seconds)[:20]!r}", field="wait_seconds")
    job = medallion_job_create(scope=scope, evidence=evidence, actor=actor)
    return medallion_job_wait(job_id=job.id, wait_seconds=wait_seconds)


def medallion_delete(*, medallion_id: Any, actor: str = "") -> None:
    """Delete a medallion with its revisions (admin); the search index forgets it."""
    with storage_op("medallion.delete", actor=actor, medallion_id=str(medallion_id)), transaction.atomic():
        medallion = _lock(medallion_id)
        pk = medallion.pk
        medallion.delete()
        announce_changed("medallion", [pk])


def medallion_jobs_failed(*, tags: list[str] | None = None, since: Any = None, untold: bool = False,
                          limit: int = 20) -> list[MedallionJob]:
    """Failed checkpoint jobs, newest first: those whose scope holds all of `tags`, finished since
    `since`, and only those not yet told to the user with `untold` (medallion_jobs_failure_told)."""
    jobs = MedallionJob.objects.filter(status=JobStatus.FAILED)
    if tags:
        jobs = jobs.filter(tags__contains=list(tags))
    if since is not None:
        jobs = jobs.filter(finished_at__gte=since)
    if untold:
        jobs = jobs.filter(failure_told_at__isnull=True)
    return list(jobs.order_by("-finished_at", "-created_at")[:limit])


def medallion_jobs_failure_told(*, job_ids: list[Any]) -> int:
    """Record that these jobs' failures were told to the user (they are not told again)."""
    return MedallionJob.objects.filter(pk__in=job_ids, failure_told_at__isnull=True).update(failure_told_at=timezone.now())

