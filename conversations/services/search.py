"""dewey_search: ranked search over messages with filters, snippets and context (full text, or by
meaning through the registered ranking engine), and what a message is to search: its embedded
texts and its surroundings."""
from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet
from django.db.models.functions import Left

from conversations.models import Conversation, Message, SessionDigest
from conversations.services.messages import READ_MAX_CHARS, validate_max_chars, validate_role, validate_session_id
from conversations.toolcalls import tool_line
from core import projects, recall, timerank
from core.connections import beside
from core.counts import planner_rows
from core.errors import InvalidInput
from core.logs import storage_op
from core.searchable import CONTEXT_REACH, EmbeddingUnavailable, Parts, Surroundings, passage_shown
from core.validation import (
    parse_date_range,
    parse_uuid,
    validate_int_range,
    validate_limit,
    validate_offset,
    validate_query,
)


def validate_context_lines(value: Any, *, field: str = "context_lines") -> int:
    return validate_int_range(value, field=field, low=0, high=10)


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
    project: projects.ProjectFilter = field(default_factory=projects.ProjectFilter)

    def sql(self, alias: str = "m") -> tuple[str, list[Any]]:
        """SQL conditions (joined with AND, may be empty) and their parameters."""
        project, params = self.project.sql(f"{alias}.project_id")
        parts: list[str] = [project] if project else []
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

    def apply(self, queryset: QuerySet[Message]) -> QuerySet[Message]:
        """The same filters on a Message queryset."""
        return self.scope(queryset).rows

    def scope(self, queryset: QuerySet[Message]) -> projects.Scope:
        """The same filters as a search's scope (for semantic search over the same rows)."""
        lookups: dict[str, Any] = {}
        if self.conversation_id is not None:
            lookups["conversation_id"] = self.conversation_id
        if self.session_id is not None:
            lookups["conversation__session_id"] = self.session_id
        if self.role is not None:
            lookups["role"] = self.role
        if self.start is not None:
            lookups["created_at__gte"] = self.start
        if self.end is not None:
            lookups["created_at__lt"] = self.end
        scope = self.project.scope(queryset)
        return scope.filter(**lookups) if lookups else scope


def message_search_filters(
    *,
    session_id: str | None = None,
    conversation_id: Any = None,
    role: str | None = None,
    start_date: Any = None,
    end_date: Any = None,
    project: Any = None,
) -> MessageFilters:
    start, end = parse_date_range(start_date, end_date)
    return MessageFilters(
        session_id=validate_session_id(session_id),
        conversation_id=None if conversation_id is None else parse_uuid(conversation_id, field="conversation_id"),
        role=None if role is None else validate_role(role),
        start=start,
        end=end,
        project=projects.search_scope(project, model=Message),
    )


@dataclass(frozen=True)
class RankedMessage:
    message_id: uuid.UUID
    rank: float
    passage: int = 0  # the message's vector that matched, when ranked by meaning (0: its own)


@dataclass(frozen=True)
class RankedPage:
    hits: list[RankedMessage]
    total: int
    total_is_estimate: bool


def message_fts_ranked(*, query: str, filters: MessageFilters, limit: int, offset: int = 0) -> RankedPage:
    """The reusable full-text part of dewey_search: message ids ranked by ts_rank_cd (ties: newer
    first) among the most recent max(WINNI_SEARCH_CANDIDATES, offset+limit) matches of `query`
    (websearch syntax, English) within `filters`, plus the total. Validates `query`; limit and
    offset are trusted (callers validate them)."""
    query = validate_query(query, words=True)
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


# A context message (the turns around a hit) carries at most this many characters of its content
# (`content_length` says how long it is).
CONTEXT_MAX_CHARS = 2000


@dataclass
class SearchHit:
    message: Message
    rank: float
    snippet: str
    context: list[Message]  # content: the first CONTEXT_MAX_CHARS characters; content_length: the whole


_MESSAGE_COLUMNS = "m.id, m.conversation_id, m.turn_number, m.role, m.content, m.metadata, m.created_at"
_HEADLINE_OPTIONS = (
    f"StartSel={SNIPPET_START}, StopSel={SNIPPET_STOP}, MaxWords=35, MinWords=15, MaxFragments=2, "
    "FragmentDelimiter=\" … \""
)
# A snippet is cut from at most this many characters of a message: from SNIPPET_LEAD before the
# first word that starts like one of the query's lexemes (its stem less the last letter, so
# 'staging' is found for 'stage'), else from its start. ts_headline parses and stems every word
# of the text it is given: over whole tool outputs of up to 20,000 characters, 20 hits took p50
# 34 / p95 120 ms (60K coding-agent messages). Only when no word starts like a lexeme the message
# holds (a stem that is no word's start) does the snippet read the whole message, as before. The
# lead is short so that the match is among the words shown when ts_headline finds no fragment
# holding the whole query and shows the text's first words (the whole message showed its start,
# often without any match).
SNIPPET_WINDOW = 2_000
SNIPPET_LEAD = 80
# The messages of a page with their snippets (parameters: query, query, lead, window, window, ids,
# options twice).
_HITS_SQL = rf"""
    WITH l AS (SELECT tsvector_to_array(to_tsvector('english', %s)) AS lexemes),
    q AS (SELECT websearch_to_tsquery('english', %s) AS tq, l.lexemes,
                 -- a word that starts like one of the lexemes (stem less its last letter: staging → stag)
                 '\m(' || (SELECT string_agg(regexp_replace(left(x, greatest(length(x) - 1, 3)),
                                                             '([^[:alnum:]_ ])', '\\\1', 'g'), '|')
                            FROM unnest(l.lexemes) x) || ')' AS starts
          FROM l),
    windowed AS (
        SELECT {_MESSAGE_COLUMNS}, m.search_vector, q.tq, q.lexemes, long.at,
               CASE WHEN long.at IS NULL THEN m.content
                    ELSE substr(m.content, greatest(1, coalesce(nullif(long.at, 0), 1) - %s), %s) END AS excerpt
        FROM conversations_message m CROSS JOIN q
        LEFT JOIN LATERAL (SELECT coalesce(regexp_instr(m.content, q.starts, 1, 1, 0, 'i'), 0) AS at
                           WHERE length(m.content) > %s) long ON true
        WHERE m.id = ANY(%s)
    )
    SELECT id, conversation_id, turn_number, role, content, metadata, created_at,
           CASE WHEN at = 0 AND length(ts_filter(setweight(search_vector, 'A', lexemes), '{{a}}')) > 0
                THEN ts_headline('english', content, tq, %s)
                ELSE ts_headline('english', excerpt, tq, %s) END AS snippet
    FROM windowed
"""


def message_hits(*, ranked: list[RankedMessage], query: str, context_lines: int) -> list[SearchHit]:
    """Load the ranked messages (with their conversation), a highlighted snippet and up to
    `context_lines` messages before and after each, keeping the given order. Plain SQL: building
    the ORM expression for 20 turn windows cost more than running the queries."""
    if not ranked:
        return []
    ids = [item.message_id for item in ranked]
    # The snippets (ts_headline over each hit's text) are made by a helper thread while this one
    # reads the conversations and the turns around the hits (1M realistic messages, a page of 20
    # hits: 4 ms of snippets beside 2.5 ms of the rest).
    hits_with_snippets = beside(lambda: {
        m.id: m
        for m in Message.objects.raw(_HITS_SQL, [query, query, SNIPPET_LEAD, SNIPPET_WINDOW, SNIPPET_WINDOW, ids,
                                                 _HEADLINE_OPTIONS, _HEADLINE_OPTIONS])
    })
    conversations = {c.pk: c for c in Conversation.objects.select_related("project").filter(
        pk__in=Message.objects.filter(id__in=ids).values("conversation_id"))}
    neighbours: dict[uuid.UUID, list[Message]] = {}
    if context_lines:
        # Only the head of each neighbour (CONTEXT_MAX_CHARS) and its length: a page of 20 hits has
        # up to 80 neighbours, many of them tool outputs of up to 20,000 characters.
        columns = _MESSAGE_COLUMNS.replace("m.content", f"left(m.content, {CONTEXT_MAX_CHARS}) AS content, "
                                                        "length(m.content) AS content_length")
        around = Message.objects.raw(
            f"SELECT DISTINCT {columns} FROM conversations_message h JOIN conversations_message m "
            "ON m.conversation_id = h.conversation_id "
            "AND m.turn_number BETWEEN h.turn_number::bigint - %s AND h.turn_number::bigint + %s "  # no int overflow
            "WHERE h.id = ANY(%s) ORDER BY m.conversation_id, m.turn_number",
            [context_lines, context_lines, ids],
        )
        for other in around:
            neighbours.setdefault(other.conversation_id, []).append(other)
    by_id = hits_with_snippets()
    result = []
    for item in ranked:
        message = by_id.get(item.message_id)
        conversation = conversations.get(message.conversation_id) if message is not None else None
        if message is None or conversation is None:  # deleted between ranking and loading
            continue
        message.conversation = conversation
        context = [
            other
            for other in neighbours.get(message.conversation_id, [])
            if other.id != message.id and abs(other.turn_number - message.turn_number) <= context_lines
        ]
        # A long turn found through one of its passages shows that passage (conversations.services.passages).
        snippet = message_display(message) or passage_shown("message", message, item.passage) \
            or message.snippet  # type: ignore[attr-defined]  # a column of the raw query (_HITS_SQL)
        result.append(SearchHit(message=message, rank=item.rank, snippet=snippet, context=context))
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
    time_filter: dict[str, Any] | None = None
    max_chars: int = READ_MAX_CHARS  # the page's JSON, its messages' content cut to fit


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
    project: Any = None,
    as_of: Any = None,
    recency: Any = None,
    max_chars: int = READ_MAX_CHARS,
) -> SearchPage:
    """dewey_search: ranked search over messages with filters, snippets and context. mode fts:
    full text (websearch syntax); semantic / hybrid: the registered engine's vector and BM25+vector
    ranking over the same filtered rows (core.recall.rank). The query's time words (relative to
    as_of, default now) and recency (a half-life in days) reorder each page as core.timerank says
    (a boost for the named range; an order question's timeline); `time_filter` says so. The page's
    JSON holds at most `max_chars` characters: its messages' content is cut to fit (READ_MAX_CHARS)."""
    mode = mode or settings.WINNI_SEARCH_DEFAULT_MODE
    if not recall.is_mode(mode):
        raise InvalidInput(f"mode must be one of {', '.join(recall.MODES)}, got {str(mode)[:40]!r}", field="mode")
    limit = validate_limit(limit)
    offset = validate_offset(offset)
    context_lines = validate_context_lines(context_lines)
    max_chars = validate_max_chars(max_chars)
    time = timerank.plan(query if isinstance(query, str) else "", as_of=as_of, recency=recency)
    filters = message_search_filters(
        session_id=session_id, conversation_id=conversation_id, role=role, start_date=start_date, end_date=end_date,
        project=project,
    )
    # Every word must match in full text: the words that named the range ("last week") are not
    # what the messages say.
    searched = timerank.without_time_words(query, time) if isinstance(query, str) else query
    with storage_op("message.search", limit=limit, offset=offset) as log:
        if mode == "fts":
            page = message_fts_ranked(query=searched, filters=filters, limit=limit, offset=offset)
        else:
            page = _message_ranked_by_meaning(query=validate_query(searched, words=True), filters=filters,
                                              limit=limit, offset=offset, mode=mode)
        hits = message_hits(ranked=page.hits, query=query, context_lines=context_lines)
        hits = timerank.reweigh(hits, time, score=lambda hit: hit.rank, created=lambda hit: hit.message.created_at)
        log.update(total=page.total, returned=len(hits))
    timeline = timerank.timeline(hits, lambda hit: hit.message.created_at, lambda hit: str(hit.message.pk)) \
        if time.order else None
    return SearchPage(query, hits, page.total, page.total_is_estimate, limit, offset, mode, time.report(timeline),
                      max_chars)


def digest_recall_scope(*, project: Any, excluding_session: str | None = None) -> projects.Scope:
    """Past sessions' digests (conversations.services.digest) a recall within `project` reads, the
    project's (core.projects.search_scope), without the session `excluding_session`'s own."""
    digests = projects.search_scope(project, model=SessionDigest).scope(SessionDigest.objects.all())
    return digests.exclude(session_id=excluding_session) if excluding_session else digests


def message_recall_scope(*, project: Any, excluding_session: str | None = None,
                         spoken_only: bool = False) -> projects.Scope:
    """The messages a recall within `project` reads (all of them for None; a token limited to
    projects reads only theirs: core.projects.search_scope), without the turns of the session
    `excluding_session` (they are in its model's context already), and with `spoken_only` only the
    user's and the assistant's turns (no tool calls)."""
    messages = projects.search_scope(project, model=Message).scope(Message.objects.all())
    if excluding_session:
        # On the message's own column (a join to conversations would keep PostgreSQL from reading
        # the scope as the messages table itself: BM25 hashed the project's rows first).
        messages = messages.exclude(
            conversation_id__in=Conversation.objects.filter(session_id=excluding_session).values("pk"))
    if spoken_only:
        messages = messages.filter(role__in=("user", "assistant"))
    return messages


def whole_conversations(scope: QuerySet[Message]) -> bool:
    """Whether a Message queryset's filters each take or leave out whole conversations (a project, a
    session, a conversation, negated or not: every column they read is the conversation's), so
    that a conversation with one turn in the scope has all of them in it. A message's project is
    its conversation's (the database keeps them equal)."""
    from django.db.models.sql.where import WhereNode

    def per_conversation(node: Any) -> bool:
        if isinstance(node, WhereNode):
            return all(per_conversation(child) for child in node.children)
        target = getattr(getattr(node, "lhs", None), "target", None)
        return target is not None and (target.model is Conversation or (
            target.model is Message and target.name in ("conversation", "project")))

    return per_conversation(scope.query.where)


def message_surroundings(keys: list[str], scope: QuerySet[Any] | None) -> Surroundings:
    """The messages up to CONTEXT_REACH turns before and after each of `keys` (within `scope`, a
    Message queryset, when given), and each one's conversation: hybrid ranking passes part of a
    hit's score to them (the message kind's `surround` in the searchable registry)."""
    if not keys:
        return Surroundings(near={}, group={})
    reach = CONTEXT_REACH
    # (bigint: the last turn number there is, 2^31 - 1, plus the reach must not overflow.)
    # One range probe of the (conversation, turn) index per candidate, in one statement (LATERAL: as a
    # plain join, or a LATERAL it could flatten, the planner hashed every message of the table: 5K
    # messages, 7 ms instead of 1; the LIMIT, at most 2 × reach rows anyway, keeps it per candidate).
    # Keys come back as text: the ranking keys rows by string, and parsing a few hundred UUIDs only
    # to print them again cost ≈ 1 ms a search. Sizes in bytes: octet_length reads a long (TOASTed)
    # text's size from its header, where length() decompresses it to count characters (800 tool
    # outputs of 1M realistic messages: 7.6 → 2.1 ms); the same number for ASCII text.
    sql = ("SELECT h.id::text, h.conversation_id::text, n.id::text, n.distance, n.size FROM conversations_message h "
           "LEFT JOIN LATERAL (SELECT m.id, abs(m.turn_number - h.turn_number) AS distance, "
           "octet_length(m.content) AS size FROM conversations_message m WHERE m.conversation_id = h.conversation_id "
           "AND m.turn_number BETWEEN h.turn_number::bigint - %s AND h.turn_number::bigint + %s "
           "AND m.turn_number <> h.turn_number LIMIT %s) n ON true "
           "WHERE h.id = ANY(%s::uuid[])")
    with connection.cursor() as cursor:
        cursor.execute(sql, [reach, reach, 2 * reach, keys])
        rows = cursor.fetchall()
    if scope is not None and not whole_conversations(scope):
        # Checked by primary key afterwards: inside the join, the planner re-ran the scope's
        # subquery once per candidate (≈ 60 ms for 100 candidates in a 2,000-message session).
        # Not needed when the scope takes or leaves whole conversations: the candidates are in it,
        # so are the turns around them (a project's 400 neighbours of 100 candidates: ≈ 3 ms).
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
    return Surroundings(near=near, group=group, size=size)


# --- what the model reads of a message ----------------------------------------------------------
#
# all-MiniLM-L6-v2 reads 256 word pieces of a text and ignores the rest, yet a text costs its whole
# length to tokenise, and every text up to the 256 to compute: a 20,000-character file dump costs
# as much model time as 256 word pieces of anything, however little of it a search would match
# by meaning. So what is embedded is chosen per role here, once, for the worker, the sweep and
# winni_reembed alike (message_embed_parts):
# - user, assistant, system: the text's first EMBED_TEXT_CHARS characters, past what the model
#   reads of prose (256 word pieces ≈ 1,100 characters of English), so their vectors are the ones
#   the whole text gives (LoCoMo and LongMemEval_S dev turns: the same word pieces for all but a
#   handful, bench/embedding_ab.py --check-chat);
# - tool: the tool's name, the head of its input (a command, a path, a pattern) and the head of its
#   output, unwrapped from the stored JSON (no keys, quotes or escaped line breaks to tokenise;
#   Read's line numbers dropped): what names the call and what it started with. The rest of a long
#   output is found by full-text search, which reads all of it.

EMBED_TEXT_CHARS = 2_000
EMBED_TOOL_INPUT_CHARS = 200
EMBED_TOOL_OUTPUT_CHARS = 300
# The stored shapes of a tool message (agents/capture.py, agents/transcripts.py):
# hooks {"tool_name", "tool_input", "tool_response"}, transcripts {"tool_use", "input"} and
# {"tool_result"}, other agents {"tool_call", "input"} / {"tool_result"}.
_TOOL_NAME_KEYS = ("tool_name", "tool_use", "tool_call")
_TOOL_INPUT_KEYS = ("tool_input", "input")
_TOOL_OUTPUT_KEYS = ("tool_response", "tool_result")
_READ_LINE_NUMBER = re.compile(r"^ *\d+\u2192", re.M)
_SPACES = re.compile(r"[ \t]{2,}")


def _flatten(value: Any, limit: int, skip: frozenset[str] = frozenset()) -> str:
    """The strings and numbers inside a JSON value, one per line, until `limit` characters; those in
    `skip` left out (a hook's tool_response repeats its input: a path, a file's new content)."""
    out: list[str] = []
    size = 0

    def walk(item: Any) -> None:
        nonlocal size
        if size >= limit:
            return
        if isinstance(item, dict):
            for inner in item.values():
                walk(inner)
        elif isinstance(item, list):
            for inner in item:
                walk(inner)
        elif isinstance(item, (str, int, float)) and not isinstance(item, bool) and str(item).strip() \
                and str(item) not in skip:
            text = str(item)[: limit - size]
            out.append(text)
            size += len(text) + 1

    walk(value)
    return "\n".join(out)


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [text for inner in value.values() for text in _strings(inner)]
    if isinstance(value, list):
        return [text for inner in value for text in _strings(inner)]
    return [value] if isinstance(value, str) else []


def _unescaped(raw: str) -> str:
    return raw.replace("\\n", "\n").replace("\\t", " ").replace('\\"', '"')


def _tool_parts(content: str) -> tuple[str, str, str] | None:
    """(name, input, output) of a stored tool message; None when it has none of the known keys.
    A message cut by the capture cap is no longer JSON: its parts are then read from the raw text."""
    try:
        body = json.loads(content)
    except ValueError:
        body = None
    if isinstance(body, dict):
        if not any(key in body for key in _TOOL_NAME_KEYS + _TOOL_INPUT_KEYS + _TOOL_OUTPUT_KEYS):
            return None
        name = next((str(body[key]) for key in _TOOL_NAME_KEYS if body.get(key)), "")
        given = next((body[key] for key in _TOOL_INPUT_KEYS if key in body), None)
        output = next((body[key] for key in _TOOL_OUTPUT_KEYS if key in body), None)
        said = frozenset(_strings(given))
        return name, _flatten(given, EMBED_TOOL_INPUT_CHARS), _flatten(output, 4 * EMBED_TOOL_OUTPUT_CHARS, said)
    if body is not None or not content.startswith("{"):
        return None
    found: dict[tuple[str, ...], int] = {}
    for group in (_TOOL_NAME_KEYS, _TOOL_INPUT_KEYS, _TOOL_OUTPUT_KEYS):
        for key in group:
            at = content.find(f'"{key}": ')
            if at >= 0:
                found[group] = at + len(key) + 4
                break
    if not found:
        return None
    name_at = found.get(_TOOL_NAME_KEYS)
    name = content[name_at:].split('"', 2)[1] if name_at is not None and content[name_at:].startswith('"') else ""

    def raw(group: tuple[str, ...], limit: int) -> str:
        at = found.get(group)
        return "" if at is None else _unescaped(content[at : at + 2 * limit]).strip('{}[]" ,')[:limit]

    return name, raw(_TOOL_INPUT_KEYS, EMBED_TOOL_INPUT_CHARS), raw(_TOOL_OUTPUT_KEYS, 4 * EMBED_TOOL_OUTPUT_CHARS)


def message_display(message: Message) -> str | None:
    """What a hit shows of a tool message: the call as one readable line, paths relative to its
    session's working directory (conversations.toolcalls); None for other messages (their text is
    shown). The stored content keeps the JSON."""
    if message.role != "tool":
        return None
    metadata = message.conversation.metadata if message.conversation_id else None
    cwd = metadata.get("cwd") if isinstance(metadata, dict) else None
    return tool_line(message.content, cwd=cwd if isinstance(cwd, str) else None)


def message_embedding_text(role: str, content: str) -> str:
    """What the embedding model reads of a message (the rule above)."""
    if role != "tool":
        return content[:EMBED_TEXT_CHARS]
    parts = _tool_parts(content)
    if parts is None:
        return content[:EMBED_TEXT_CHARS]
    name, given, output = parts
    output = _SPACES.sub(" ", _READ_LINE_NUMBER.sub("", output)).strip()[:EMBED_TOOL_OUTPUT_CHARS]
    return "\n".join(part for part in (name, given.strip(), output) if part) or content[:EMBED_TOOL_OUTPUT_CHARS]


def message_embed_parts(messages: list[Message]) -> list[Parts]:
    """What gets embedded for each message: what the model reads of it (message_embedding_text),
    plus WINNI_EMBEDDING_CONTEXT_WEIGHT of what it reads of the turn before it. A short reply
    ("Seven years now!") means little alone; the turn it answers says what it is about. Summing
    the two turns' vectors instead of embedding their joined text reads each turn once (the
    previous turn is usually in the same batch): 2-3x the messages per second, for about the same
    ranking (LoCoMo dev, semantic turn recall@10: alone 51.3, joined 53.4, summed 53.9; hybrid 76.0
    joined, 75.3-75.5 summed; README, "Retrieval quality")."""
    weight = settings.WINNI_EMBEDDING_CONTEXT_WEIGHT
    texts = {(m.conversation_id, m.turn_number): message_embedding_text(m.role, m.content) for m in messages}
    wanted = {(m.conversation_id, m.turn_number - 1) for m in messages if m.turn_number > 1} if weight else set()
    missing = wanted - texts.keys()
    if missing:
        # A tool message's parts are read from its whole JSON (at most the capture cap).
        for conversation, turn, role, content in Message.objects.filter(
            conversation_id__in={conversation for conversation, _ in missing},
            turn_number__in={turn for _, turn in missing},
        ).annotate(head=Left("content", CONTEXT_READ_CHARS)).values_list("conversation_id", "turn_number", "role", "head"):
            if (conversation, turn) in missing:
                texts[(conversation, turn)] = message_embedding_text(role, content)
    return [message_parts(texts[(message.conversation_id, message.turn_number)],
                          texts.get((message.conversation_id, message.turn_number - 1)))
            for message in messages]


# How much of a previous turn outside the batch is loaded to read it: past the capture cap
# (WINNI_CAPTURE_TOOL_MAX_CHARS, 20,000) so a tool message's JSON arrives whole.
CONTEXT_READ_CHARS = 40_000


def message_parts(text: str, before: str | None) -> Parts:
    """A message's weighted texts: what the model reads of it, and of the previous turn (if any)
    at WINNI_EMBEDDING_CONTEXT_WEIGHT."""
    weight = settings.WINNI_EMBEDDING_CONTEXT_WEIGHT
    return [(text, 1.0), (before, weight)] if before and weight else [(text, 1.0)]


def _message_ranked_by_meaning(*, query: str, filters: MessageFilters, limit: int, offset: int,
                               mode: recall.Mode) -> RankedPage:
    """semantic / hybrid ranking of the filtered messages. If the embedding provider is down,
    hybrid answers from its BM25 side alone and semantic reports the outage."""
    try:
        found = recall.rank(query=query, scopes={"message": filters.scope(Message.objects.all())}, limit=limit,
                            offset=offset, mode=mode,
                            attach=False)  # message_hits loads the rows, with snippets and context
    except EmbeddingUnavailable as exc:
        raise InvalidInput(f"mode semantic needs the embedding provider, which is unavailable: {exc}",
                           field="mode") from exc
    ranked = [RankedMessage(message_id=uuid.UUID(hit.key), rank=hit.fused, passage=hit.passage) for hit in found]
    # Every message is some distance from the query: the total is what was ranked, an estimate.
    return RankedPage(hits=ranked, total=offset + len(ranked), total_is_estimate=True)


