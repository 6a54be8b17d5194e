"""Conversations: the business rules every interface (MCP, REST, admin, tasks) calls."""
from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce, Left
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from conversations.models import Conversation, FiedlerResult, FiedlerStatus, Message, Role
from winni_site.errors import Conflict, InvalidInput, NotFound
from winni_site.logs import storage_op
from winni_site.searchable import Parts, announce_changed
from winni_site.validation import validate_limit, validate_offset, validate_storable, validate_text

if TYPE_CHECKING:
    from memory import retrieval

ROLE_INVALID = "role must be one of user, assistant, system, tool"
CONTENT_EMPTY = "content must not be empty or whitespace"
METADATA_NOT_OBJECT = "metadata must be a JSON object or null"
TURN_INVALID = "turn_number must be an integer of at least 1"


# --- validation shared by every write -------------------------------------------------------


def parse_uuid(value: Any, *, field: str) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, AttributeError, TypeError):
        raise InvalidInput(f"{field} must be a UUID, got {str(value)[:80]!r}", field=field) from None


def validate_metadata(value: Any, *, field: str = "metadata") -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    raise InvalidInput(f"{field}: {METADATA_NOT_OBJECT}", field=field)


def validate_content(value: Any, *, field: str = "content") -> str:
    return validate_text(value, field=field, empty_message=f"{field}: {CONTENT_EMPTY}")


def validate_role(value: Any, *, field: str = "role") -> str:
    if value not in Role.values:
        raise InvalidInput(f"{field}: {ROLE_INVALID}, got {str(value)[:40]!r}", field=field)
    return str(value)


def validate_turn_number(value: Any, *, field: str = "turn_number") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{field}: {TURN_INVALID}", field=field)
    return value


def parse_timestamp(value: Any, *, field: str) -> dt.datetime | None:
    """ISO 8601 (a naive value is taken as UTC); None stays None."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        parsed: dt.datetime | None = value
    else:
        try:
            parsed = parse_datetime(str(value))
        except ValueError:
            parsed = None
    if parsed is None:
        raise InvalidInput(f"{field} must be an ISO 8601 date-time, got {str(value)[:60]!r}", field=field)
    if timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, dt.timezone.utc)
    return parsed


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
    conversation = Conversation.objects.select_for_update().filter(pk=pk).first()
    if conversation is None:
        raise NotFound(f"conversation {pk} not found", field="conversation_id")
    return conversation


def conversation_get(*, conversation_id: Any) -> tuple[Conversation, list[Message]]:
    """A conversation with its messages in turn order."""
    pk = parse_uuid(conversation_id, field="conversation_id")
    with storage_op("conversation.get", conversation_id=str(pk)) as log:
        conversation = Conversation.objects.filter(pk=pk).first()
        if conversation is None:
            raise NotFound(f"conversation {pk} not found", field="conversation_id")
        messages = list(conversation.messages.order_by("turn_number").defer("search_vector"))
        log["messages"] = len(messages)
    return conversation, messages


# --- writes ----------------------------------------------------------------------------------


def conversation_begin(*, session_id: str | None = None, metadata: dict[str, Any] | None = None) -> Conversation:
    session_id = validate_session_id(session_id)
    metadata = validate_metadata(metadata)
    with storage_op("conversation.begin") as log:
        conversation = Conversation.objects.create(session_id=session_id, metadata=metadata)
        log["conversation_id"] = str(conversation.id)
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
    return (last or 0) + 1


def _touch(conversation: Conversation) -> None:
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now())


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
    metadata = validate_metadata(metadata)
    created = parse_timestamp(created_at, field="created_at")
    with storage_op("message.store") as log, transaction.atomic():
        # Moving updated_at takes the conversation's row lock (held until commit), so this one
        # statement both serialises concurrent writers and proves the conversation exists.
        pk = parse_uuid(conversation_id, field="conversation_id")
        now = timezone.now()
        if not Conversation.objects.filter(pk=pk).update(updated_at=now):
            raise NotFound(f"conversation {pk} not found", field="conversation_id")
        if turn_number is None:
            turn_number = _next_turn(pk)
        elif Message.objects.filter(conversation_id=pk, turn_number=turn_number).exists():
            raise Conflict(f"turn_number {turn_number} already exists in conversation {pk}", field="turn_number")
        message = Message(
            conversation_id=pk,
            turn_number=turn_number,
            role=role,
            content=content,
            metadata=metadata,
            created_at=created or now,
        )
        message.save(force_insert=True)
        _announce_stored([message.id])
        log.update(conversation_id=str(pk), message_id=str(message.id), turn=turn_number)
    return message


BULK_EMPTY = "messages must be a non-empty list"
BULK_TOO_MANY = "messages may hold at most {limit} items"
MAX_BULK_MESSAGES = 1000
FORCE_REQUIRED = "force must be true to delete a conversation and its messages"
SORT_INVALID = "sort_by must be created_at or updated_at"
QUERY_EMPTY = "must contain at least one searchable word (it is empty or only stop words)"


# Lists count exactly up to this many rows; beyond, `total` is the planner's estimate (a count of
# 100,000 conversations on every page costs more than the page itself).
COUNT_EXACT_UP_TO = 10_000


def planner_rows(sql: str, params: Any) -> int:
    """PostgreSQL's estimate of how many rows `sql` returns (EXPLAIN, nothing is executed)."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    plan = plan if isinstance(plan, list) else json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


def capped_count(queryset: Any) -> tuple[int, bool]:
    """(total, total_is_estimate): exact up to COUNT_EXACT_UP_TO, the planner's estimate beyond."""
    exact = queryset.order_by()[: COUNT_EXACT_UP_TO + 1].count()
    if exact <= COUNT_EXACT_UP_TO:
        return exact, False
    sql, params = queryset.order_by().values("pk").query.sql_with_params()
    return max(planner_rows(sql, params), exact), True


def validate_context_lines(value: Any, *, field: str = "context_lines") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10:
        raise InvalidInput(f"{field} must be an integer from 0 to 10, got {value!r}", field=field)
    return value


def parse_date_bound(value: Any, *, field: str, end: bool) -> dt.datetime | None:
    """ISO 8601 date-time, or a date alone: as a start it means the day's first instant, as an end
    the whole day is included (the bound becomes the next midnight, exclusive)."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and len(value.strip()) == 10:
        try:
            day = dt.date.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInput(f"{field} must be an ISO 8601 date or date-time, got {value[:60]!r}", field=field) from None
        midnight = dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc)
        return midnight + dt.timedelta(days=1) if end else midnight
    try:
        parsed = parse_timestamp(value, field=field)
    except InvalidInput:
        raise InvalidInput(f"{field} must be an ISO 8601 date or date-time, got {str(value)[:60]!r}", field=field) from None
    # A date-time end is inclusive: move it just past the instant so `< end` keeps it.
    return parsed + dt.timedelta(microseconds=1) if end and parsed else parsed


def parse_date_range(start_date: Any, end_date: Any) -> tuple[dt.datetime | None, dt.datetime | None]:
    """(start inclusive, end exclusive); start after end is an error naming start_date."""
    start = parse_date_bound(start_date, field="start_date", end=False)
    end = parse_date_bound(end_date, field="end_date", end=True)
    if start and end and start >= end:
        raise InvalidInput("start_date must not be after end_date", field="start_date")
    return start, end


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
                "content": validate_content(item.get("content"), field=f"{prefix}.content"),
                "metadata": validate_metadata(item.get("metadata"), field=f"{prefix}.metadata"),
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
) -> tuple[Conversation, list[Message]]:
    """Store many messages atomically (all or none), turns following the array order after the
    conversation's last turn. Without conversation_id a new conversation is created (with
    session_id and metadata); with it, session_id and metadata must be omitted."""
    clean = _validated_bulk_messages(messages)
    if conversation_id is not None and (session_id is not None or metadata is not None):
        field = "session_id" if session_id is not None else "metadata"
        raise InvalidInput(f"{field} is only used when creating a conversation (conversation_id omitted)", field=field)
    session_id = validate_session_id(session_id)
    metadata = validate_metadata(metadata)
    with storage_op("message.store_bulk", count=len(clean)) as log, transaction.atomic():
        if conversation_id is None:
            conversation = Conversation.objects.create(session_id=session_id, metadata=metadata)
        else:
            conversation = conversation_get_for_update(conversation_id=conversation_id)
        first_turn = _next_turn(conversation)
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
        _touch(conversation)
        _announce_stored([row.id for row in rows])
        log.update(conversation_id=str(conversation.id), first_turn=first_turn)
    return conversation, rows


# --- list and delete -------------------------------------------------------------------------


def conversation_list(
    *, session_id: str | None = None, limit: int = 20, offset: int = 0, sort_by: str = "updated_at"
) -> tuple[list[Conversation], int, bool]:
    """A page of conversations (newest first by sort_by), each annotated with `message_count`,
    the total number matching and whether that total is an estimate (see `capped_count`)."""
    session_id = validate_session_id(session_id)
    limit = validate_limit(limit)
    offset = validate_offset(offset)
    if sort_by not in ("created_at", "updated_at"):
        raise InvalidInput(f"{SORT_INVALID}, got {str(sort_by)[:40]!r}", field="sort_by")
    with storage_op("conversation.list", session_id=session_id) as log:
        queryset = Conversation.objects.all()
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


# --- search ----------------------------------------------------------------------------------
#
# Ranking policy (README "Search"): the matches are filtered, then only the most recent
# WINNI_SEARCH_CANDIDATES (default 1000) of them are ranked with ts_rank_cd, ties going to the
# newer message; a page reaching past them continues with the older matches, newest first. So a
# term found in 90% of a million messages costs one backwards walk of the created_at index until
# 1000 matches are found, not a rank of 900,000 rows. `total` is exact while the matches fit in
# the window (max(candidates, offset+limit)); beyond it, it is the planner's estimate and
# `total_is_estimate` is true.

SNIPPET_START, SNIPPET_STOP = "**", "**"


@dataclass(frozen=True)
class MessageFilters:
    """Validated search filters (build with `message_search_filters`)."""

    session_id: str | None = None
    conversation_id: uuid.UUID | None = None
    role: str | None = None
    start: dt.datetime | None = None  # inclusive
    end: dt.datetime | None = None  # exclusive

    def sql(self, alias: str = "m") -> tuple[str, list[Any]]:
        """SQL conditions (joined with AND, may be empty) and their parameters."""
        parts: list[str] = []
        params: list[Any] = []
        if self.conversation_id is not None:
            parts.append(f"{alias}.conversation_id = %s")
            params.append(self.conversation_id)
        if self.session_id is not None:
            parts.append(f"{alias}.conversation_id IN (SELECT id FROM conversations_conversation WHERE session_id = %s)")
            params.append(self.session_id)
        if self.role is not None:
            parts.append(f"{alias}.role = %s")
            params.append(self.role)
        if self.start is not None:
            parts.append(f"{alias}.created_at >= %s")
            params.append(self.start)
        if self.end is not None:
            parts.append(f"{alias}.created_at < %s")
            params.append(self.end)
        return " AND ".join(parts), params

    def apply(self, queryset: Any) -> Any:
        """The same filters on a Message queryset (for semantic search over the same rows)."""
        if self.conversation_id is not None:
            queryset = queryset.filter(conversation_id=self.conversation_id)
        if self.session_id is not None:
            queryset = queryset.filter(conversation__session_id=self.session_id)
        if self.role is not None:
            queryset = queryset.filter(role=self.role)
        if self.start is not None:
            queryset = queryset.filter(created_at__gte=self.start)
        if self.end is not None:
            queryset = queryset.filter(created_at__lt=self.end)
        return queryset


def message_search_filters(
    *,
    session_id: str | None = None,
    conversation_id: Any = None,
    role: str | None = None,
    start_date: Any = None,
    end_date: Any = None,
) -> MessageFilters:
    start, end = parse_date_range(start_date, end_date)
    return MessageFilters(
        session_id=validate_session_id(session_id),
        conversation_id=None if conversation_id is None else parse_uuid(conversation_id, field="conversation_id"),
        role=None if role is None else validate_role(role),
        start=start,
        end=end,
    )


@dataclass(frozen=True)
class RankedMessage:
    message_id: uuid.UUID
    rank: float


@dataclass(frozen=True)
class RankedPage:
    hits: list[RankedMessage]
    total: int
    total_is_estimate: bool


def validate_query(query: Any, *, field: str = "query") -> str:
    """A websearch query with at least one indexable word; raises naming `field` otherwise."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput(f"{field}: {QUERY_EMPTY}", field=field)
    if len(query) > 1000:
        raise InvalidInput(f"{field} must be at most 1000 characters", field=field)
    with connection.cursor() as cursor:
        cursor.execute("SELECT numnode(websearch_to_tsquery('english', %s))", [query])
        if cursor.fetchone()[0] == 0:
            raise InvalidInput(f"{field}: {QUERY_EMPTY}", field=field)
    return query


def message_fts_ranked(*, query: str, filters: MessageFilters, limit: int, offset: int = 0) -> RankedPage:
    """The reusable full-text part of dewey_search: message ids ranked by ts_rank_cd (ties: newer
    first) among the most recent max(WINNI_SEARCH_CANDIDATES, offset+limit) matches of `query`
    (websearch syntax, English) within `filters`, plus the total. Validates `query`; limit and
    offset are trusted (callers validate them)."""
    query = validate_query(query)
    candidates = settings.WINNI_SEARCH_CANDIDATES
    window = max(candidates, offset + limit)
    where, params = filters.sql("m")
    where = f"AND {where}" if where else ""
    # The ranked block is the `candidates` most recent matches; pages reaching past it continue
    # with older matches newest first, so every page is consistent with the others.
    sql = f"""
        WITH recent AS (
            SELECT m.id, m.created_at, m.search_vector
            FROM conversations_message m
            WHERE m.search_vector @@ websearch_to_tsquery('english', %s) {where}
            ORDER BY m.created_at DESC, m.id
            LIMIT %s
        ), numbered AS (
            SELECT id, created_at, ts_rank_cd(search_vector, websearch_to_tsquery('english', %s)) AS rank,
                   row_number() OVER (ORDER BY created_at DESC, id) AS pos, count(*) OVER () AS found
            FROM recent
        )
        SELECT id, rank, found
        FROM numbered
        ORDER BY pos > %s, CASE WHEN pos <= %s THEN rank END DESC NULLS LAST, created_at DESC, id
        LIMIT %s OFFSET %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [query, *params, window, query, candidates, candidates, limit, offset])
        rows = cursor.fetchall()
        if rows:
            found = rows[0][2]
        else:
            # The page is past the end (or nothing matched): count the candidates alone.
            cursor.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM conversations_message m WHERE m.search_vector @@ "
                f"websearch_to_tsquery('english', %s) {where} LIMIT %s) s",
                [query, *params, window],
            )
            found = cursor.fetchone()[0]
        estimate = found >= window
        total = found
    if estimate:
        total = max(
            planner_rows(
                "SELECT 1 FROM conversations_message m WHERE m.search_vector @@ "
                f"websearch_to_tsquery('english', %s) {where}",
                [query, *params],
            ),
            window,
        )
    hits = [RankedMessage(message_id=row[0], rank=float(row[1])) for row in rows]
    return RankedPage(hits=hits, total=total, total_is_estimate=estimate)


@dataclass
class SearchHit:
    message: Message
    rank: float
    snippet: str
    context: list[Message]


_MESSAGE_COLUMNS = "m.id, m.conversation_id, m.turn_number, m.role, m.content, m.metadata, m.created_at"
_HEADLINE_OPTIONS = (
    f"StartSel={SNIPPET_START}, StopSel={SNIPPET_STOP}, MaxWords=35, MinWords=15, MaxFragments=2, "
    "FragmentDelimiter=\" … \""
)


def message_hits(*, ranked: list[RankedMessage], query: str, context_lines: int) -> list[SearchHit]:
    """Load the ranked messages (with their conversation), a highlighted snippet and up to
    `context_lines` messages before and after each, keeping the given order. Plain SQL: building
    the ORM expression for 20 turn windows cost more than running the queries."""
    if not ranked:
        return []
    ids = [item.message_id for item in ranked]
    by_id = {
        m.id: m
        for m in Message.objects.raw(
            f"SELECT {_MESSAGE_COLUMNS}, ts_headline('english', m.content, websearch_to_tsquery('english', %s), %s) "
            "AS snippet FROM conversations_message m WHERE m.id = ANY(%s)",
            [query, _HEADLINE_OPTIONS, ids],
        )
    }
    conversations = Conversation.objects.in_bulk({m.conversation_id for m in by_id.values()})
    neighbours: dict[uuid.UUID, list[Message]] = {}
    if context_lines:
        hits = list(by_id.values())
        around = Message.objects.raw(
            f"SELECT DISTINCT {_MESSAGE_COLUMNS} FROM conversations_message m "
            "JOIN unnest(%s::uuid[], %s::int[]) AS h(conversation_id, turn) "
            "ON m.conversation_id = h.conversation_id AND m.turn_number BETWEEN h.turn - %s AND h.turn + %s "
            "ORDER BY m.conversation_id, m.turn_number",
            [[m.conversation_id for m in hits], [m.turn_number for m in hits], context_lines, context_lines],
        )
        for other in around:
            neighbours.setdefault(other.conversation_id, []).append(other)
    result = []
    for item in ranked:
        message = by_id.get(item.message_id)
        if message is None:  # deleted between ranking and loading
            continue
        message.conversation = conversations[message.conversation_id]
        context = [
            other
            for other in neighbours.get(message.conversation_id, [])
            if other.id != message.id and abs(other.turn_number - message.turn_number) <= context_lines
        ]
        result.append(SearchHit(message=message, rank=item.rank, snippet=message.snippet, context=context))  # type: ignore[attr-defined]
    return result


@dataclass
class SearchPage:
    query: str
    hits: list[SearchHit]
    total: int
    total_is_estimate: bool
    limit: int
    offset: int
    mode: str = "fts"


def message_search(
    *,
    query: Any,
    session_id: str | None = None,
    conversation_id: Any = None,
    role: str | None = None,
    start_date: Any = None,
    end_date: Any = None,
    limit: int = 20,
    offset: int = 0,
    context_lines: int = 2,
    mode: str | None = None,
) -> SearchPage:
    """dewey_search: ranked search over messages with filters, snippets and context. mode fts:
    full text (websearch syntax); semantic / hybrid: the memory app's vector and BM25+vector
    ranking over the same filtered rows (memory.retrieval)."""
    mode = mode or settings.WINNI_SEARCH_DEFAULT_MODE
    if mode not in SEARCH_MODES:
        raise InvalidInput(f"mode must be one of {', '.join(SEARCH_MODES)}, got {str(mode)[:40]!r}", field="mode")
    limit = validate_limit(limit)
    offset = validate_offset(offset)
    context_lines = validate_context_lines(context_lines)
    filters = message_search_filters(
        session_id=session_id, conversation_id=conversation_id, role=role, start_date=start_date, end_date=end_date
    )
    with storage_op("message.search", limit=limit, offset=offset) as log:
        if mode == "fts":
            page = message_fts_ranked(query=query, filters=filters, limit=limit, offset=offset)
        else:
            page = _message_ranked_by_meaning(query=validate_query(query), filters=filters, limit=limit,
                                              offset=offset, mode=mode)
        hits = message_hits(ranked=page.hits, query=query, context_lines=context_lines)
        log.update(total=page.total, returned=len(hits))
    return SearchPage(query, hits, page.total, page.total_is_estimate, limit, offset, mode)


SEARCH_MODES = ("fts", "semantic", "hybrid")


def message_surroundings(keys: list[str], scope: Any) -> retrieval.Surroundings:
    """The messages up to retrieval.CONTEXT_REACH turns before and after each of `keys` (within
    `scope`, a Message queryset, when given), and each one's conversation: hybrid ranking passes
    part of a hit's score to them."""
    from memory import retrieval

    if not keys:
        return retrieval.Surroundings(near={}, group={})
    reach = retrieval.CONTEXT_REACH
    # One range probe of the (conversation, turn) index per candidate, in one statement (LATERAL: as a
    # plain join, or a LATERAL it could flatten, the planner hashed every message of the table: 5K
    # messages, 7 ms instead of 1; the LIMIT, at most 2 × reach rows anyway, keeps it per candidate).
    # Keys come back as text: the ranking keys rows by string, and parsing a few hundred UUIDs only
    # to print them again cost ≈ 1 ms a search.
    sql = ("SELECT h.id::text, h.conversation_id::text, n.id::text, n.distance, n.size FROM conversations_message h "
           "LEFT JOIN LATERAL (SELECT m.id, abs(m.turn_number - h.turn_number) AS distance, "
           "length(m.content) AS size FROM conversations_message m WHERE m.conversation_id = h.conversation_id "
           "AND m.turn_number BETWEEN h.turn_number - %s AND h.turn_number + %s "
           "AND m.turn_number <> h.turn_number LIMIT %s) n ON true "
           "WHERE h.id = ANY(%s::uuid[])")
    with connection.cursor() as cursor:
        cursor.execute(sql, [reach, reach, 2 * reach, keys])
        rows = cursor.fetchall()
    if scope is not None:
        # Checked by primary key afterwards: inside the join, the planner re-ran the scope's
        # subquery once per candidate (≈ 60 ms for 100 candidates in a 2,000-message session).
        inside = {str(pk) for pk in scope.filter(pk__in={row[2] for row in rows if row[2] is not None})
                  .values_list("pk", flat=True)}
        rows = [row if row[2] in inside else (*row[:2], None, None, None) for row in rows]
    near: dict[str, list[tuple[str, int]]] = {}
    group: dict[str, str] = {}
    size: dict[str, int] = {}
    for hit, conversation, other, distance, length in rows:
        group[hit] = conversation
        nearby = near.setdefault(hit, [])
        if other is not None:
            nearby.append((other, distance))
            size[other] = length
    return retrieval.Surroundings(near=near, group=group, size=size)


def message_embed_parts(messages: list[Message]) -> list[Parts]:
    """What gets embedded for each message: its content, plus WINNI_EMBEDDING_CONTEXT_WEIGHT of
    the turn before it. A short reply ("Seven years now!") means little alone; the turn it answers
    says what it is about. Summing the two turns' vectors instead of embedding their joined text
    reads each turn once (the previous turn is usually in the same batch): 2-3x the messages per
    second, for about the same ranking (LoCoMo dev, semantic turn recall@10: alone 51.3, joined
    53.4, summed 53.9; hybrid 76.0 joined, 75.3-75.5 summed; README, "Retrieval quality")."""
    weight = settings.WINNI_EMBEDDING_CONTEXT_WEIGHT
    wanted = {(m.conversation_id, m.turn_number - 1) for m in messages if m.turn_number > 1} if weight else set()
    previous: dict[tuple[Any, int], str] = {}
    if wanted:
        # Only as much of a (possibly huge) previous turn as the embedder reads.
        for conversation, turn, content in Message.objects.filter(
            conversation_id__in={conversation for conversation, _ in wanted},
            turn_number__in={turn for _, turn in wanted},
        ).annotate(head=Left("content", settings.WINNI_EMBEDDING_MAX_CHARS)).values_list(
            "conversation_id", "turn_number", "head"):
            if (conversation, turn) in wanted:
                previous[(conversation, turn)] = content
    return [message_parts(message.content, previous.get((message.conversation_id, message.turn_number - 1)))
            for message in messages]


def message_parts(content: str, before: str | None) -> Parts:
    """A message's weighted texts: its content, and the previous turn's (if any) at
    WINNI_EMBEDDING_CONTEXT_WEIGHT."""
    weight = settings.WINNI_EMBEDDING_CONTEXT_WEIGHT
    return [(content, 1.0), (before, weight)] if before and weight else [(content, 1.0)]


def _message_ranked_by_meaning(*, query: str, filters: MessageFilters, limit: int, offset: int, mode: str) -> RankedPage:
    """semantic / hybrid ranking of the filtered messages. If the embedding provider is down,
    hybrid answers from its BM25 side alone and semantic reports the outage."""
    from memory import retrieval
    from memory.embeddings import EmbeddingUnavailable

    scope = filters.apply(Message.objects.all())
    narrowed = bool(filters.sql()[0])
    try:
        found = retrieval.search(query=query, scopes={"message": scope}, filtered={"message": narrowed}, limit=limit,
                                 offset=offset, mode=mode, surround={"message": message_surroundings},  # type: ignore[arg-type]
                                 attach=False)  # message_hits loads the rows, with snippets and context
    except EmbeddingUnavailable as exc:
        raise InvalidInput(f"mode semantic needs the embedding provider, which is unavailable: {exc}",
                           field="mode") from exc
    ranked = [RankedMessage(message_id=uuid.UUID(hit.key), rank=hit.fused) for hit in found]
    # Every message is some distance from the query: the total is what was ranked, an estimate.
    return RankedPage(hits=ranked, total=offset + len(ranked), total_is_estimate=True)


# --- orchestration results ("Fiedler") -------------------------------------------------------

FIEDLER_BATCH_MAX = 100
STATUS_INVALID = "status must be success or error"


def _required_text(value: Any, *, field: str, max_length: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field} must be a non-empty string", field=field)
    if len(value) > max_length:
        raise InvalidInput(f"{field} must be at most {max_length} characters", field=field)
    return value


def _optional_count(value: Any, *, field: str) -> int | None:
    return None if value is None else validate_offset(value, field=field)


def _optional_text(value: Any, *, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string or null", field=field)
    return validate_storable(value, field=field)


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
    prompt = _optional_text(item.get("prompt"), field=f"{prefix}prompt")
    return FiedlerResult(
        correlation_id=_required_text(item.get("correlation_id"), field=f"{prefix}correlation_id", max_length=255),
        model=_required_text(item.get("model"), field=f"{prefix}model", max_length=200),
        prompt=None if (redact or settings.WINNI_REDACT_PROMPTS) else prompt,
        output=_optional_text(output, field=f"{prefix}output") or "",
        tokens_prompt=_optional_count(item.get("tokens_prompt"), field=f"{prefix}tokens_prompt"),
        tokens_completion=_optional_count(item.get("tokens_completion"), field=f"{prefix}tokens_completion"),
        duration_seconds=None if duration is None else float(duration),
        status=validate_status(item.get("status", "success"), field=f"{prefix}status"),
        error_message=_optional_text(item.get("error_message"), field=f"{prefix}error_message"),
        metadata=validate_metadata(item.get("metadata"), field=f"{prefix}metadata"),
        conversation_id=None
        if conversation_id is None
        else parse_uuid(conversation_id, field=f"{prefix}conversation_id"),
    )


def _check_conversations_exist(rows: list[FiedlerResult], prefix: str) -> None:
    wanted = {row.conversation_id for row in rows if row.conversation_id is not None}
    found = set(Conversation.objects.filter(pk__in=wanted).values_list("pk", flat=True))
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
        rows = list(FiedlerResult.objects.filter(correlation_id=correlation_id).defer("search_vector").order_by("created_at", "model"))
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
) -> tuple[list[FiedlerResult], int, bool]:
    """Results filtered by model, status, correlation id, date range and words in prompt or output
    (websearch syntax), newest first, with the total matching and whether it is an estimate."""
    from django.contrib.postgres.search import SearchQuery

    limit = validate_limit(limit)
    offset = validate_offset(offset)
    start, end = parse_date_range(start_date, end_date)
    queryset = FiedlerResult.objects.defer("search_vector")
    if model is not None:
        queryset = queryset.filter(model=_required_text(model, field="model", max_length=200))
    if status is not None:
        queryset = queryset.filter(status=validate_status(status))
    if correlation_id is not None:
        queryset = queryset.filter(correlation_id=_required_text(correlation_id, field="correlation_id", max_length=255))
    if text is not None:
        queryset = queryset.filter(search_vector=SearchQuery(validate_query(text, field="text"), config="english", search_type="websearch"))
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
