"""The return shapes shared by MCP tools and REST views (one place per shape)."""
from typing import Any, TypedDict, cast

from core.redaction import RedactionCounts
from medallions.models import Medallion, MedallionJob, MedallionRevision
from medallions.services import failure_message


class MedallionDict(TypedDict):
    meta: dict[str, Any]
    scope: dict[str, list[str]]
    summary: dict[str, Any]
    decisions: list[dict[str, Any]]
    open_questions: list[dict[str, Any]]
    affordances: dict[str, list[str]]


class MedallionListDict(TypedDict):
    medallions: list[MedallionDict]
    text: str | None


class RevisionDict(TypedDict):
    number: int
    actor: str
    operation: str
    job_id: str | None
    created_at: str
    document: dict[str, Any]


class HistoryDict(TypedDict):
    medallion_id: str
    revisions: list[RevisionDict]


class JobErrorDict(TypedDict):
    scope: dict[str, list[str]]
    operation: str
    cause: str
    message: str


class JobDict(RedactionCounts):
    job_id: str
    status: str
    operation: str
    scope: dict[str, list[str]]
    provider: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    medallion_id: str | None
    medallion: MedallionDict | None
    error: JobErrorDict | None


def medallion_dict(medallion: Medallion) -> MedallionDict:
    return cast(MedallionDict, medallion.document())  # the stored document, validated on every write


def medallion_list_dict(medallions: list[Medallion], text: str | None = None) -> MedallionListDict:
    return {"medallions": [medallion_dict(m) for m in medallions], "text": text}


def revision_dict(revision: MedallionRevision) -> RevisionDict:
    return {
        "number": revision.number,
        "actor": revision.actor,
        "operation": revision.operation,
        "job_id": str(revision.job_id) if revision.job_id else None,
        "created_at": revision.created_at.isoformat(),
        "document": revision.document,
    }


def history_dict(medallion_id: Any, revisions: list[MedallionRevision]) -> HistoryDict:
    return {"medallion_id": str(medallion_id), "revisions": [revision_dict(r) for r in revisions]}


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def job_dict(job: MedallionJob) -> JobDict:
    error: JobErrorDict | None = None
    if job.status == "failed":
        operation = job.operation or "checkpoint"
        error = {
            "scope": job.scope,
            "operation": operation,
            "cause": job.error,
            "message": failure_message(scope=job.scope, operation=operation, cause=job.error),
        }
    medallion = job.medallion if job.status == "done" else None
    return {
        "job_id": str(job.id),
        "status": job.status,
        "operation": job.operation,
        "scope": job.scope,
        "provider": job.provider,
        "created_at": job.created_at.isoformat(),
        "started_at": _iso(job.started_at),
        "finished_at": _iso(job.finished_at),
        "medallion_id": str(job.medallion_id) if job.medallion_id else None,
        "medallion": medallion_dict(medallion) if medallion else None,
        "error": error,
    }
