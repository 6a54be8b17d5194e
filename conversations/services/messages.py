"""Conversations and their messages: access, writes (one or many, atomically), lists and deletes.
Every interface (MCP, REST, admin, capture) calls these."""
from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

from django.db import connection, transaction
from django.db.models import Count, DateTimeField, IntegerField, Max, OuterRef, QuerySet, Subquery, TextField, Value
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils import timezone

from conversations.models import Conversation, Message, Role, prompt_title
from core import counts, projects, shortref
from core.errors import Conflict, InvalidInput, NotFound
from core.logs import storage_op
from core.redaction import plain, redact, redact_json
from core.searchable import announce_changed
from core.validation import (
    parse_timestamp,
    parse_uuid,
    validate_int_range,
    validate_limit,
    validate_metadata,
    validate_offset,
    validate_text,
)

ROLE_INVALID = "must be one of user, assistant, system, tool"
CONTENT_EMPTY = "must not be empty or whitespace"
TURN_MAX = 2**31 - 1  # the column is a PostgreSQL integer
TURN_INVALID = f"must be an integer from 1 to {TURN_MAX}"
BULK_EMPTY = "messages must be a non-empty list"
BULK_TOO_MANY = "messages may hold at most {limit} items"
MAX_BULK_MESSAGES = 1000
FORCE_REQUIRED = "force must be true to delete a conversation and its messages"
SORT_INVALID = "sort_by must be created_at or updated_at"


# --- validation of a message's fields ----------------------------------------------------------


def validate_content(value: Any, *, field: str = "content") -> str:
    """Stored content: secrets and `<private>` spans redacted (core.redaction), then checked."""
    return validate_text(redact(value, field=field), field=field, empty_message=f"{field}: {CONTENT_EMPTY}")


# A search page or a conversation is what an agent reads at once. Claude Code keeps a tool result
# over 50,000 characters out of the conversation (it saves it to a file and names the file) and
# refuses one over 25,000 tokens; on the realistic corpus a search page of 20 hits with two turns
# either side held whole tool outputs of up to 20,000 characters: 198,000 characters of JSON at
# the median, 468,000 at most. The messages' texts are cut so that the JSON holds at most
# `max_chars` characters (conversations.outputs); `truncated` and `content_length` say what was
# left out. The default leaves room for the indentation of MCP's text form under Claude Code's 50,000.
READ_MAX_CHARS = 36_000
READ_MAX_CHARS_RANGE = (2_000, 2_000_000)


def validate_max_chars(value: Any, *, field: str = "max_chars") -> int:
    low, high = READ_MAX_CHARS_RANGE
    return validate_int_range(value, field=field, low=low, high=high)


def validate_role(value: Any, *, field: str = "role") -> str:
    if value not in Role.values:
        raise InvalidInput(f"{field}: {ROLE_INVALID}, got {str(value)[:40]!r}", field=field)
    return str(value)


def validate_turn_number(value: Any, *, field: str = "turn_number") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= TURN_MAX:
        raise InvalidInput(f"{field}: {TURN_INVALID}", field=field)
    return value


def validate_session_id(value: Any, *, field: str = "session_id") -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 500:
        raise InvalidInput(f"{field} must be a string of at most 500 characters", field=field)
    return value


# --- access ----------------------------------------------------------------------------------


def conversation_get_for_update(*, conversation_id: Any) -> Conversation:
    """Fetch and lock a conversation row; must run inside a transaction."""
    pk = parse_uuid(conversation_id, field="conversation_id")
    conversation = projects.scope_queryset(Conversation.objects.select_for_update(), None).filter(pk=pk).first()
    if conversation is None:
        raise NotFound(f"conversation {pk} not found", field="conversation_id")
    return conversation


def conversation_refs(*, ids: Sequence[Any]) -> dict[str, str]:
    """Each conversation id → its short name (core.shortref: its first 8 hex digits, or the whole
    id when another conversation's starts the same), as automatic recall's block names it."""
    return shortref.refs(Conversation, ids)


def conversation_get(*, conversation_id: Any, turn_from: Any = None, turn_to: Any = None,
                     max_chars: Any = READ_MAX_CHARS) -> tuple[Conversation, list[Message]]:
    """A conversation with its messages in turn order: those from turn `turn_from` to `turn_to`
    (both included; either open; none when turn_to is before turn_from) when given, so that a
    search hit's turn can be read whole. `conversation_id`: its id or its short name
    (conversation_refs, as automatic recall's block names it).
    `max_chars` is checked here for the JSON the interfaces make of it (outputs.conversation_dict)."""
    low = validate_turn_number(turn_from, field="turn_from")
    high = validate_turn_number(turn_to, field="turn_to")  # before turn_from: no turn, as dates in a search
    validate_max_chars(max_chars)
    pk = shortref.resolve(projects.scope_queryset(Conversation.objects.all(), None), conversation_id,
                          field="conversation_id", noun="conversation")
    with storage_op("conversation.get", conversation_id=str(pk)) as log:
        conversation = projects.scope_queryset(Conversation.objects.select_related("project"), None).filter(pk=pk).first()
        if conversation is None:
            raise NotFound(f"conversation {pk} not found", field="conversation_id")
        messages = conversation.messages.order_by("turn_number").defer("search_vector")
        if low is not None:
            messages = messages.filter(turn_number__gte=low)
        if high is not None:
            messages = messages.filter(turn_number__lte=high)
        loaded = list(messages)
        log["messages"] = len(loaded)
    return conversation, loaded


def conversation_find(*, conversation_id: Any) -> Conversation | None:
    """The conversation with this id (its project loaded), or None."""
    return Conversation.objects.filter(id=conversation_id).select_related("project").first()


def conversation_for_session(*, session_id: str, source: str) -> Conversation | None:
    """The first conversation of a client's session (`metadata.source` names the client), with its
    project, or None."""
    return (Conversation.objects.filter(session_id=session_id, metadata__source=source)
            .select_related("project").order_by("created_at").first())


def conversation_activity(*, sources: tuple[str, ...], since: dt.datetime) -> dict[int | None, dict[str, Any]]:
    """Per project (None: conversations without one), among the conversations whose
    `metadata.source` is one of `sources`: the newest `updated_at` (a stored message moves it) and
    how many of their messages were created since `since`. Cheap on a large database: the
    second count reads only the messages since then (the created_at index)."""
    sessions = Conversation.objects.filter(metadata__source__in=sources).order_by()
    activity: dict[int | None, dict[str, Any]] = {}
    for row in sessions.values("project").annotate(last=Max("updated_at")):
        activity[row["project"]] = {"last_event_at": row["last"], "events_today": 0}
    recent = Message.objects.filter(created_at__gte=since, conversation__metadata__source__in=sources)
    for counted in recent.order_by().values("conversation__project").annotate(n=Count("*")):
        activity.setdefault(counted["conversation__project"], {"last_event_at": None})["events_today"] = counted["n"]
    return activity


def message_id_with_metadata(*, conversation: Conversation, key: str, value: Any) -> Any:
    """The id of a message of `conversation` whose metadata holds `value` under `key`, or None."""
    return (Message.objects.filter(conversation=conversation, **{f"metadata__{key}": value})
            .values_list("pk", flat=True).first())


def message_metadata_values(*, conversation: Conversation, key: str) -> set[Any]:
    """The values under `key` in the metadata of `conversation`'s messages that have it."""
    return set(Message.objects.filter(conversation=conversation, metadata__has_key=key)
               .values_list(f"metadata__{key}", flat=True))


def conversations_by_id(*, ids: list[Any]) -> dict[Any, Conversation]:
    """id → conversation (its session id, metadata and project id only) of each of `ids` that exists."""
    return {c.id: c for c in Conversation.objects.filter(id__in=ids).only("id", "session_id", "metadata", "project_id")}


def message_metadata_value(*, message_id: Any, key: str) -> Any:
    """The value under `key` in a message's metadata (None: no such message or key)."""
    return Message.objects.filter(pk=message_id).values_list(f"metadata__{key}", flat=True).first()


def message_metadata_set(*, message_id: Any, key: str, value: Any) -> bool:
    """Set `key` in a message's metadata (the row locked: read-modify-write); False when there is no
    such message. Runs in the caller's transaction when there is one."""
    with transaction.atomic():
        message = Message.objects.select_for_update().filter(pk=message_id).first()
        if message is None:
            return False
        Message.objects.filter(pk=message.pk).update(metadata={**(message.metadata or {}), key: value})
    return True


# --- writes ----------------------------------------------------------------------------------


def conversation_begin(*, session_id: str | None = None, metadata: dict[str, Any] | None = None,
                       project: Any = None) -> Conversation:
    """A new conversation, in `project` (a name that must match an existing project, or a
    Project) or global."""
    session_id = validate_session_id(session_id)
    metadata = redact_json(validate_metadata(metadata))
    in_project = projects.project_for_write(project)
    with storage_op("conversation.begin") as log:
        conversation = Conversation.objects.create(session_id=session_id, metadata=metadata, project=in_project)
        projects.project_touch(conversation.project_id)
        log.update(conversation_id=str(conversation.id), project=in_project.slug if in_project else None)
    return conversation


def conversation_roots(conversation: Conversation) -> list[str]:
    """The folders the conversation's project lives in, which its paths are named relative to
    (core.paths.project_path): the git root its session's hook reported (capture keeps it in the
    metadata), its project's known git roots or folders, else the session's working directory."""
    metadata = conversation.metadata if isinstance(conversation.metadata, dict) else {}
    reported, cwd = metadata.get("git_root"), metadata.get("cwd")
    roots = [reported] if isinstance(reported, str) and reported else []
    roots += projects.project_roots([conversation.project_id])
    return roots or ([cwd] if isinstance(cwd, str) and cwd else [])


@dataclass
class FollowingTurn:
    """A prompt (or the message a file's recall followed) and the turn after it, up to the next
    prompt: what automatic recall's use judgment (agents.use) reads."""

    role: str
    content: str
    roots: list[str]  # the conversation's folders (conversation_roots)
    cwd: str | None
    turns: list[tuple[str, str]]  # (role, content) of the following messages, oldest first
    closed: bool  # a later prompt ended the turn


def message_following_turn(message_id: Any, *, limit: int) -> FollowingTurn | None:
    """The message `message_id` with up to `limit` messages after it, up to its session's next
    prompt; None when the message is gone."""
    message = Message.objects.select_related("conversation").filter(pk=message_id).first()
    if message is None:
        return None
    later = Message.objects.filter(conversation_id=message.conversation_id, turn_number__gt=message.turn_number)
    next_prompt = later.filter(role="user").order_by("turn_number").values_list("turn_number", flat=True).first()
    turn = later.filter(turn_number__lt=next_prompt) if next_prompt is not None else later
    metadata = message.conversation.metadata if isinstance(message.conversation.metadata, dict) else {}
    cwd = metadata.get("cwd")
    return FollowingTurn(role=message.role, content=message.content, roots=conversation_roots(message.conversation),
                         cwd=cwd if isinstance(cwd, str) else None,
                         turns=list(turn.order_by("turn_number").values_list("role", "content")[:limit]),
                         closed=next_prompt is not None)


def conversation_set_project(*, conversation: Conversation, project: Any) -> Conversation:
    """Put a conversation in a project (capture: a session whose project became known late)."""
    in_project = projects.project_for_write(project)
    with storage_op("conversation.set_project", conversation_id=str(conversation.pk)):
        Conversation.objects.filter(pk=conversation.pk).update(project=in_project)
    conversation.project = in_project
    return conversation


def _next_turn(conversation: Conversation | uuid.UUID) -> int:
    """Caller holds the conversation row lock, so no other writer can take the same number."""
    pk = conversation.pk if isinstance(conversation, Conversation) else conversation
    last = (
        Message.objects.filter(conversation_id=pk)
        .order_by("-turn_number")
        .values_list("turn_number", flat=True)
        .first()
    )
    if (last or 0) >= TURN_MAX:
        raise Conflict(f"conversation {pk} has no turn number left (the last is {last})", field="turn_number")
    return (last or 0) + 1


def _touch(conversation: Conversation, rows: list[Message]) -> None:
    """Move updated_at, and keep the title and first/last message times (see message_store)."""
    times = [row.created_at for row in rows]
    prompt = next((row.content for row in rows if row.role == Role.USER), None)
    Conversation.objects.filter(pk=conversation.pk).update(
        updated_at=timezone.now(),
        # PostgreSQL's LEAST and GREATEST skip NULLs: the first messages set both.
        first_message_at=Least("first_message_at", Value(min(times), output_field=DateTimeField())),
        last_message_at=Greatest("last_message_at", Value(max(times), output_field=DateTimeField())),
        title=Coalesce("title", Value(None if prompt is None else prompt_title(prompt), output_field=TextField())),
    )


def _announce_stored(message_ids: list[uuid.UUID]) -> None:
    """Tell the search pipeline (embeddings) once the rows are committed and visible."""
    announce_changed("message", message_ids)


def message_store(
    *,
    conversation_id: Any,
    role: str,
    content: str,
    turn_number: int | None = None,
    metadata: dict[str, Any] | None = None,
    created_at: Any = None,
) -> Message:
    role = validate_role(role)
    content = validate_content(content)
    turn_number = validate_turn_number(turn_number)
    metadata = redact_json(validate_metadata(metadata))
    created = parse_timestamp(created_at, field="created_at")
    with storage_op("message.store") as log, transaction.atomic():
        # Moving updated_at takes the conversation's row lock (held until commit), so this one
        # statement both serialises concurrent writers and proves the conversation exists. It also
        # keeps the conversation's title (first user prompt) and first/last message times.
        pk = parse_uuid(conversation_id, field="conversation_id")
        now = timezone.now()
        when = created or now
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE conversations_conversation SET updated_at = %s, first_message_at = LEAST(first_message_at, %s),"
                " last_message_at = GREATEST(last_message_at, %s), title = COALESCE(title, %s)"
                " WHERE id = %s RETURNING project_id",
                [now, when, when, prompt_title(content) if role == Role.USER else None, pk])
            found = cursor.fetchone()
        if found is None or not projects.project_visible(found[0]):  # (another project's: rolled back)
            raise NotFound(f"conversation {pk} not found", field="conversation_id")
        projects.project_touch(found[0])
        if turn_number is None:
            turn_number = _next_turn(pk)
        elif Message.objects.filter(conversation_id=pk, turn_number=turn_number).exists():
            raise Conflict(f"turn_number {turn_number} already exists in conversation {pk}", field="turn_number")
        message = Message(
            conversation_id=pk,
            turn_number=turn_number,
            role=role,
            content=plain(content),
            metadata=metadata,
            created_at=when,
        )
        message.save(force_insert=True)
        _announce_stored([message.id])
        log.update(conversation_id=str(pk), message_id=str(message.id), turn=turn_number)
    return message


# --- bulk ------------------------------------------------------------------------------------


def _validated_bulk_messages(messages: Any) -> list[dict[str, Any]]:
    """Validate every message before anything is written; errors name `messages[i].field`."""
    if not isinstance(messages, list) or not messages:
        raise InvalidInput(f"messages: {BULK_EMPTY}", field="messages")
    if len(messages) > MAX_BULK_MESSAGES:
        raise InvalidInput(f"messages: {BULK_TOO_MANY.format(limit=MAX_BULK_MESSAGES)}", field="messages")
    clean = []
    for index, item in enumerate(messages):
        prefix = f"messages[{index}]"
        if not isinstance(item, dict):
            raise InvalidInput(f"{prefix} must be an object with role and content", field=prefix)
        unknown = set(item) - {"role", "content", "metadata", "created_at"}
        if unknown:
            raise InvalidInput(
                f"{prefix}: unknown field(s) {sorted(unknown)}; allowed: role, content, metadata, created_at "
                "(turn numbers follow the array order)",
                field=f"{prefix}.{sorted(unknown)[0]}",
            )
        clean.append(
            {
                "role": validate_role(item.get("role"), field=f"{prefix}.role"),
                "content": plain(validate_content(item.get("content"), field=f"{prefix}.content")),
                "metadata": redact_json(validate_metadata(item.get("metadata"), field=f"{prefix}.metadata")),
                "created_at": parse_timestamp(item.get("created_at"), field=f"{prefix}.created_at"),
            }
        )
    return clean


def _copy_messages(rows: list[Message]) -> None:
    """Insert messages with COPY: for hundreds of rows it costs a fraction of bulk_create's
    per-value preparation. Runs inside the caller's transaction."""
    from psycopg.types.json import Jsonb

    with connection.cursor() as cursor:
        with cursor.cursor.copy(
            "COPY conversations_message (id, conversation_id, turn_number, role, content, metadata, created_at) "
            "FROM STDIN"
        ) as copy:
            for row in rows:
                copy.write_row(
                    (
                        row.id, row.conversation_id, row.turn_number, row.role, row.content,
                        None if row.metadata is None else Jsonb(row.metadata), row.created_at,
                    )
                )


def messages_store_bulk(
    *,
    messages: Any,
    conversation_id: Any = None,
    session_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    project: Any = None,
) -> tuple[Conversation, list[Message]]:
    """Store many messages atomically (all or none), turns following the array order after the
    conversation's last turn. Without conversation_id a new conversation is created (with
    session_id, metadata and project); with it, those must be omitted."""
    clean = _validated_bulk_messages(messages)
    if conversation_id is not None and (session_id is not None or metadata is not None or project is not None):
        field = "session_id" if session_id is not None else "metadata" if metadata is not None else "project"
        raise InvalidInput(f"{field} is only used when creating a conversation (conversation_id omitted)", field=field)
    session_id = validate_session_id(session_id)
    metadata = redact_json(validate_metadata(metadata))
    in_project = projects.project_for_write(project)
    with storage_op("message.store_bulk", count=len(clean)) as log, transaction.atomic():
        if conversation_id is None:
            conversation = Conversation.objects.create(session_id=session_id, metadata=metadata, project=in_project)
        else:
            conversation = conversation_get_for_update(conversation_id=conversation_id)
        first_turn = _next_turn(conversation)
        if first_turn + len(clean) - 1 > TURN_MAX:
            raise Conflict(f"conversation {conversation.pk} has only {TURN_MAX - first_turn + 1} turn numbers left",
                           field="messages")
        now = timezone.now()
        rows = [
            Message(
                id=uuid.uuid4(),
                conversation=conversation,
                turn_number=first_turn + index,
                role=item["role"],
                content=item["content"],
                metadata=item["metadata"],
                created_at=item["created_at"] or now,
            )
            for index, item in enumerate(clean)
        ]
        _copy_messages(rows)
        _touch(conversation, rows)
        projects.project_touch(conversation.project_id)
        _announce_stored([row.id for row in rows])
        log.update(conversation_id=str(conversation.id), first_turn=first_turn)
    return conversation, rows


# --- list and delete -------------------------------------------------------------------------


def conversation_list(
    *, session_id: str | None = None, limit: int = 20, offset: int = 0, sort_by: str = "updated_at",
    project: Any = None,
) -> tuple[Sequence[Conversation], int, bool]:
    """A page of conversations (newest first by sort_by), each annotated with `message_count`,
    the total number matching and whether that total is an estimate (see `capped_count`).
    `project`: only that project's (a name matching no project: none)."""
    session_id = validate_session_id(session_id)
    limit = validate_limit(limit)
    offset = validate_offset(offset)
    if sort_by not in ("created_at", "updated_at"):
        raise InvalidInput(f"{SORT_INVALID}, got {str(sort_by)[:40]!r}", field="sort_by")
    with storage_op("conversation.list", session_id=session_id) as log:
        queryset = projects.scope_queryset(Conversation.objects.select_related("project"), project)
        if session_id is not None:
            queryset = queryset.filter(session_id=session_id)
        total, estimate = capped_count(queryset)
        # A correlated count per row of the page only (not a GROUP BY over every message).
        page = list(
            queryset.annotate(message_count=_message_count_subquery()).order_by(f"-{sort_by}", "-id")[
                offset : offset + limit
            ]
        )
        log.update(total=total, returned=len(page))
    return page, total, estimate


def _message_count_subquery() -> Any:
    counts = (
        Message.objects.filter(conversation=OuterRef("pk")).order_by().values("conversation").annotate(n=Count("*"))
    )
    return Coalesce(Subquery(counts.values("n"), output_field=IntegerField()), 0)


def conversation_delete(*, conversation_id: Any, force: bool = False) -> int:
    """Delete a conversation and (FK cascade) its messages; returns how many messages went.
    Refuses unless force is true. Announces the deleted message ids so search indexes forget them."""
    pk = parse_uuid(conversation_id, field="conversation_id")
    if force is not True:
        raise InvalidInput(FORCE_REQUIRED, field="force")
    with storage_op("conversation.delete", conversation_id=str(pk)) as log, transaction.atomic():
        conversation = conversation_get_for_update(conversation_id=pk)
        message_ids = list(Message.objects.filter(conversation=conversation).values_list("id", flat=True))
        conversation.delete()
        _announce_stored(message_ids)
        log["messages_deleted"] = len(message_ids)
    return len(message_ids)


# --- counting ------------------------------------------------------------------------------------

# Lists count exactly up to this many rows; beyond, `total` is the planner's estimate (a count of
# 100,000 conversations on every page costs more than the page itself).
COUNT_EXACT_UP_TO = 10_000


def capped_count(queryset: QuerySet[Any]) -> tuple[int, bool]:
    """(total, total_is_estimate): exact up to COUNT_EXACT_UP_TO, the planner's estimate beyond."""
    return counts.capped_count(queryset, COUNT_EXACT_UP_TO)


