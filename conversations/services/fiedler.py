"""Orchestration results ("Fiedler"): one model's output of a multi-model run, stored under the
run's correlation id, and the queries over them."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from conversations.models import Conversation, FiedlerResult, FiedlerStatus
from conversations.services.messages import capped_count
from core import projects
from core.errors import InvalidInput, NotFound
from core.logs import storage_op
from core.redaction import plain, redact, redact_json
from core.validation import (
    parse_date_range,
    parse_uuid,
    validate_limit,
    validate_metadata,
    validate_offset,
    validate_query,
    validate_storable,
)

# --- orchestration results ("Fiedler") -------------------------------------------------------

FIEDLER_BATCH_MAX = 100
STATUS_INVALID = "must be success or error"


def _required_text(value: Any, *, field: str, max_length: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string", field=field)
    if len(value) > max_length:
        raise InvalidInput(f"{field} must be at most {max_length} characters", field=field)
    return value


def _optional_count(value: Any, *, field: str) -> int | None:
    return None if value is None else validate_offset(value, field=field)


def _optional_text(value: Any, *, field: str, stored: bool = True) -> str | None:
    """A stored text (secrets and `<private>` spans redacted, core.redaction) or None; a text
    that is not `stored` (a withheld prompt) is only checked."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string or null", field=field)
    if not stored:
        return None
    return plain(validate_storable(redact(value, field=field), field=field))


def validate_status(value: Any, *, field: str = "status") -> str:
    if value not in FiedlerStatus.values:
        raise InvalidInput(f"{field}: {STATUS_INVALID}, got {str(value)[:40]!r}", field=field)
    return str(value)


def _fiedler_row(item: dict[str, Any], *, prefix: str = "") -> FiedlerResult:
    """Validate one result (fields named `prefix + name`) into an unsaved row, redaction applied."""
    known = {
        "correlation_id", "model", "prompt", "output", "tokens_prompt", "tokens_completion", "duration_seconds",
        "status", "error_message", "metadata", "conversation_id", "redact",
    }
    unknown = set(item) - known
    if unknown:
        name = sorted(unknown)[0]
        raise InvalidInput(f"{prefix}{name} is not a field of a Fiedler result", field=f"{prefix}{name}")
    duration = item.get("duration_seconds")
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, (int, float)) or duration < 0):
        raise InvalidInput(f"{prefix}duration_seconds must be a number of at least 0", field=f"{prefix}duration_seconds")
    redact = item.get("redact", False)
    if not isinstance(redact, bool):
        raise InvalidInput(f"{prefix}redact must be true or false", field=f"{prefix}redact")
    output = item.get("output")
    if not isinstance(output, str):
        raise InvalidInput(f"{prefix}output must be a string", field=f"{prefix}output")
    conversation_id = item.get("conversation_id")
    withheld = redact or settings.WINNI_REDACT_PROMPTS
    prompt = _optional_text(item.get("prompt"), field=f"{prefix}prompt", stored=not withheld)
    return FiedlerResult(
        correlation_id=_required_text(item.get("correlation_id"), field=f"{prefix}correlation_id", max_length=255),
        model=_required_text(item.get("model"), field=f"{prefix}model", max_length=200),
        prompt=prompt,
        output=_optional_text(output, field=f"{prefix}output") or "",
        tokens_prompt=_optional_count(item.get("tokens_prompt"), field=f"{prefix}tokens_prompt"),
        tokens_completion=_optional_count(item.get("tokens_completion"), field=f"{prefix}tokens_completion"),
        duration_seconds=None if duration is None else float(duration),
        status=validate_status(item.get("status", "success"), field=f"{prefix}status"),
        error_message=_optional_text(item.get("error_message"), field=f"{prefix}error_message"),
        metadata=redact_json(validate_metadata(item.get("metadata"), field=f"{prefix}metadata")),
        conversation_id=None
        if conversation_id is None
        else parse_uuid(conversation_id, field=f"{prefix}conversation_id"),
    )


def _check_conversations_exist(rows: list[FiedlerResult], prefix: str) -> None:
    wanted = {row.conversation_id for row in rows if row.conversation_id is not None}
    if len(wanted) < len(rows):
        projects.require_visible(None, field="conversation_id")  # a token limited to projects: no global results
    found = set(projects.scope_queryset(Conversation.objects.filter(pk__in=wanted), None).values_list("pk", flat=True))
    for index, row in enumerate(rows):
        if row.conversation_id is not None and row.conversation_id not in found:
            field = f"{prefix.format(index=index)}conversation_id"
            raise NotFound(f"{field}: conversation {row.conversation_id} not found", field=field)


def fiedler_result_store(**fields: Any) -> FiedlerResult:
    """Store one orchestration result. Keyword arguments are the result's fields (see
    `fiedler_results_store_batch`) plus `redact` (store NULL as the prompt)."""
    row = _fiedler_row(fields)
    with storage_op("fiedler.store") as log, transaction.atomic():
        _check_conversations_exist([row], "")
        row.save(force_insert=True)
        log.update(id=str(row.id), correlation_id=row.correlation_id, redacted=row.prompt is None)
    return row


def fiedler_results_store_batch(*, results: Any) -> list[FiedlerResult]:
    """Store up to 100 results in one transaction: all or none. Each item has correlation_id,
    model, output (required), prompt, tokens_prompt, tokens_completion, duration_seconds, status
    (success|error, default success), error_message, metadata, conversation_id, redact."""
    if not isinstance(results, list) or not results:
        raise InvalidInput("results must be a non-empty list", field="results")
    if len(results) > FIEDLER_BATCH_MAX:
        raise InvalidInput(f"results may hold at most {FIEDLER_BATCH_MAX} items, got {len(results)}", field="results")
    rows = []
    for index, item in enumerate(results):
        if not isinstance(item, dict):
            raise InvalidInput(f"results[{index}] must be an object", field=f"results[{index}]")
        rows.append(_fiedler_row(item, prefix=f"results[{index}]."))
    with storage_op("fiedler.store_batch", count=len(rows)) as log, transaction.atomic():
        _check_conversations_exist(rows, "results[{index}].")
        FiedlerResult.objects.bulk_create(rows)
        log["correlation_ids"] = sorted({row.correlation_id for row in rows})[:10]
    return rows


def fiedler_results_for_correlation(*, correlation_id: Any) -> list[FiedlerResult]:
    """Every result of one orchestration run, oldest first; an unknown id is NotFound."""
    correlation_id = _required_text(correlation_id, field="correlation_id", max_length=255)
    with storage_op("fiedler.get", correlation_id=correlation_id) as log:
        scoped = projects.scope_queryset(FiedlerResult.objects.filter(correlation_id=correlation_id), None,
                                         lookup="conversation__project")
        rows = list(scoped.defer("search_vector").order_by("created_at", "model"))
        log["results"] = len(rows)
    if not rows:
        raise NotFound(f"no Fiedler results for correlation_id {correlation_id!r}", field="correlation_id")
    return rows


def fiedler_results_query(
    *,
    model: str | None = None,
    status: str | None = None,
    correlation_id: str | None = None,
    text: str | None = None,
    start_date: Any = None,
    end_date: Any = None,
    limit: int = 20,
    offset: int = 0,
    project: Any = None,
) -> tuple[list[FiedlerResult], int, bool]:
    """Results filtered by model, status, correlation id, date range, words in prompt or output
    (websearch syntax) and project (the project of the conversation a result links to; results
    without a conversation belong to none), newest first, with the total matching and whether it
    is an estimate."""
    from django.contrib.postgres.search import SearchQuery

    limit = validate_limit(limit)
    offset = validate_offset(offset)
    start, end = parse_date_range(start_date, end_date)
    queryset = projects.scope_queryset(FiedlerResult.objects.defer("search_vector"), project,
                                       lookup="conversation__project")
    if model is not None:
        queryset = queryset.filter(model=_required_text(model, field="model", max_length=200))
    if status is not None:
        queryset = queryset.filter(status=validate_status(status))
    if correlation_id is not None:
        queryset = queryset.filter(correlation_id=_required_text(correlation_id, field="correlation_id", max_length=255))
    if text is not None:
        words = validate_query(text, field="text", words=True)
        queryset = queryset.filter(search_vector=SearchQuery(words, config="english", search_type="websearch"))
    if start is not None:
        queryset = queryset.filter(created_at__gte=start)
    if end is not None:
        queryset = queryset.filter(created_at__lt=end)
    with storage_op("fiedler.query") as log:
        total, estimate = capped_count(queryset)
        rows = list(queryset.order_by("-created_at", "-id")[offset : offset + limit])
        log.update(total=total, returned=len(rows))
    return rows, total, estimate


def fiedler_result_delete(*, result: FiedlerResult) -> None:
    with storage_op("fiedler.delete", id=str(result.id)):
        result.delete()
