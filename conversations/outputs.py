"""The return shapes of seed 001 §5, shared by MCP tools and REST views (one place per shape)."""
import json
from typing import Any, Sequence, TypedDict

from conversations.models import Conversation, FiedlerResult, Message
from conversations.services import SearchHit, SearchPage
from conversations.services.messages import READ_MAX_CHARS
from conversations.services.search import CONTEXT_MAX_CHARS
from core.projects import slug_of
from core.redaction import RedactionCounts


class MessageDict(TypedDict):
    message_id: str
    id: str  # the same as message_id, kept for older clients
    turn: int
    role: str
    content: str
    truncated: bool
    content_length: int
    metadata: dict[str, Any] | None
    created_at: str


class ConversationDict(TypedDict):
    conversation_id: str
    session_id: str | None
    project: str | None
    created_at: str
    updated_at: str
    metadata: dict[str, Any] | None
    messages: list[MessageDict]


class BegunDict(RedactionCounts):
    conversation_id: str
    session_id: str | None
    project: str | None
    created_at: str


class StoredMessageDict(RedactionCounts):
    message_id: str
    conversation_id: str
    turn_number: int
    created_at: str


def begun_dict(conversation: Conversation) -> BegunDict:
    return {
        "conversation_id": str(conversation.id),
        "session_id": conversation.session_id,
        "project": slug_of(conversation),
        "created_at": conversation.created_at.isoformat(),
    }


def stored_message_dict(message: Message) -> StoredMessageDict:
    return {
        "message_id": str(message.id),
        "conversation_id": str(message.conversation_id),
        "turn_number": message.turn_number,
        "created_at": message.created_at.isoformat(),
    }


def message_dict(message: Message) -> MessageDict:
    return {
        "message_id": str(message.id),
        "id": str(message.id),
        "turn": message.turn_number,
        "role": message.role,
        "content": message.content,
        "truncated": False,
        "content_length": len(message.content),
        "metadata": message.metadata,
        "created_at": message.created_at.isoformat(),
    }


def conversation_dict(conversation: Conversation, messages: list[Message],
                      max_chars: int = READ_MAX_CHARS) -> ConversationDict:
    """The conversation as JSON, its messages' content cut so that it holds at most `max_chars`
    characters (READ_MAX_CHARS says why; a long message is read whole by its turn range)."""
    out: ConversationDict = {
        "conversation_id": str(conversation.id),
        "session_id": conversation.session_id,
        "project": slug_of(conversation),
        "created_at": conversation.created_at.isoformat(),
        "updated_at": conversation.updated_at.isoformat(),
        "metadata": conversation.metadata,
        "messages": [message_dict(message) for message in messages],
    }
    fit_texts(out, [(message, "content", 1) for message in out["messages"]], max_chars)
    return out


class BulkStoredDict(RedactionCounts):
    conversation_id: str
    stored: int
    message_ids: list[str]
    first_turn: int
    last_turn: int


class ConversationSummaryDict(TypedDict):
    conversation_id: str
    id: str  # the same as conversation_id, kept for older clients
    session_id: str | None
    project: str | None
    created_at: str
    updated_at: str
    message_count: int
    metadata: dict[str, Any] | None


class ConversationListDict(TypedDict):
    conversations: list[ConversationSummaryDict]
    total: int
    total_is_estimate: bool
    limit: int
    offset: int


class DeletedDict(TypedDict):
    deleted: bool
    conversation_id: str
    messages_deleted: int


# Context messages are cut to CONTEXT_MAX_CHARS characters (a hit's own content is never cut):
# twenty hits with four 1 MiB neighbours each would otherwise make an 80 MiB answer. The search
# service reads no more of them (conversations.services.search).


class ContextMessageDict(TypedDict):
    message_id: str
    turn: int
    role: str
    content: str
    truncated: bool
    created_at: str


class SearchHitDict(TypedDict):
    conversation_id: str
    message_id: str
    turn: int
    role: str
    content: str
    truncated: bool
    content_length: int
    rank: float
    snippet: str
    created_at: str
    session_id: str | None
    project: str | None
    conversation_metadata: dict[str, Any] | None
    context: list[ContextMessageDict]


class SearchPageDict(TypedDict):
    query: str
    results: list[SearchHitDict]
    total: int
    total_is_estimate: bool
    limit: int
    offset: int
    mode: str
    time_filter: dict[str, Any] | None


def bulk_stored_dict(conversation: Conversation, messages: list[Message]) -> BulkStoredDict:
    return {
        "conversation_id": str(conversation.id),
        "stored": len(messages),
        "message_ids": [str(message.id) for message in messages],
        "first_turn": messages[0].turn_number,
        "last_turn": messages[-1].turn_number,
    }


def conversation_list_dict(
    conversations: Sequence[Conversation], total: int, estimate: bool, limit: int, offset: int
) -> ConversationListDict:
    return {
        "conversations": [
            {
                "conversation_id": str(conversation.id),
                "id": str(conversation.id),
                "session_id": conversation.session_id,
                "project": slug_of(conversation),
                "created_at": conversation.created_at.isoformat(),
                "updated_at": conversation.updated_at.isoformat(),
                "message_count": conversation.message_count,  # type: ignore[attr-defined]  # annotated by conversation_list
                "metadata": conversation.metadata,
            }
            for conversation in conversations
        ],
        "total": total,
        "total_is_estimate": estimate,
        "limit": limit,
        "offset": offset,
    }


def deleted_dict(conversation_id: str, messages_deleted: int) -> DeletedDict:
    return {"deleted": True, "conversation_id": conversation_id, "messages_deleted": messages_deleted}


def search_hit_dict(hit: SearchHit) -> SearchHitDict:
    message = hit.message
    return {
        "conversation_id": str(message.conversation_id),
        "message_id": str(message.id),
        "turn": message.turn_number,
        "role": message.role,
        "content": message.content,
        "truncated": False,
        "content_length": len(message.content),
        "rank": round(hit.rank, 6),
        "snippet": hit.snippet,
        "created_at": message.created_at.isoformat(),
        "session_id": message.conversation.session_id,
        "project": slug_of(message.conversation),
        "conversation_metadata": message.conversation.metadata,
        "context": [
            {
                "message_id": str(other.id),
                "turn": other.turn_number,
                "role": other.role,
                "content": other.content[:CONTEXT_MAX_CHARS],
                "truncated": getattr(other, "content_length", len(other.content)) > CONTEXT_MAX_CHARS,
                "created_at": other.created_at.isoformat(),
            }
            for other in hit.context
        ],
    }


def search_page_dict(page: SearchPage) -> SearchPageDict:
    """The page as JSON, its messages' content cut so that it holds at most page.max_chars
    characters (conversations.services.messages.READ_MAX_CHARS says why)."""
    out: SearchPageDict = {
        "query": page.query,
        "results": [search_hit_dict(hit) for hit in page.hits],
        "total": page.total,
        "total_is_estimate": page.total_is_estimate,
        "limit": page.limit,
        "offset": page.offset,
        "mode": page.mode,
        "time_filter": page.time_filter,
    }
    hits = out["results"]
    fit_texts(out, [*((hit, "snippet", SNIPPET_WEIGHT) for hit in hits), *((hit, "content", HIT_WEIGHT) for hit in hits),
                    *((turn, "content", 1) for hit in hits for turn in hit["context"])], page.max_chars)
    return out


# When a search page's texts are cut, a hit's snippet (where it matches: ts_headline's fragments, up to
# ≈ 700 characters of code) keeps this many times the characters of a turn around it, a hit's own
# content HIT_WEIGHT times.
SNIPPET_WEIGHT = 8
HIT_WEIGHT = 4


def _json_chars(value: Any) -> int:
    """The length of `value` as compact JSON (as the REST API writes it)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def fit_texts(document: Any, fields: list[tuple[Any, str, int]], max_chars: int) -> None:
    """Cut the texts that `fields` name in `document` (each: the dict holding it, its key, its weight) so
    that the document's JSON holds at most `max_chars` characters: the room left by everything
    else is shared out, short texts whole, long ones cut from their start to the same level,
    weighted. A cut `content` says `truncated`, a cut snippet ends in "…"; with no room at all the
    rest of the document is kept whole. Only documents of about max_chars are written out to be
    measured, never a whole one of long texts."""
    texts = [part[key] for part, key, _ in fields]
    truncated = [part.get("truncated", False) for part, _, _ in fields]

    def overrun(room: int) -> int:
        """By how much the document's JSON exceeds max_chars with `room` characters of texts."""
        shares = fair_shares([len(text) for text in texts], [weight for _, _, weight in fields], room)
        for (part, key, _), text, was_cut, share in zip(fields, texts, truncated, shares):
            if key == "snippet":
                part[key] = text if share >= len(text) else text[:max(0, share - 1)] + "…"
            else:
                part[key], part["truncated"] = text[:share], was_cut or share < len(text)
        return _json_chars(document) - max_chars

    room = max(0, -overrun(0))  # what the rest of the document leaves
    over = overrun(room)
    while over > 0 and room > 0:
        # JSON escapes (newlines, quotes, backslashes) make a text longer than its characters: less
        # what it overran, and at least an eighth less each time, so that it ends in a few steps.
        room = max(0, room - max(over, room // 8))
        over = overrun(room)


def fair_shares(lengths: list[int], weights: list[int], budget: int) -> list[int]:
    """How much of each length fits `budget` altogether: each gets min(its length, its weight × L)
    for the largest level L that fits (max-min fairness, weighted)."""
    if sum(lengths) <= budget:
        return list(lengths)
    shares = [0] * len(lengths)
    left, weight_left = budget, sum(weights)
    for index in sorted(range(len(lengths)), key=lambda i: lengths[i] / weights[i]):
        level = left / weight_left
        shares[index] = min(lengths[index], int(weights[index] * level))
        left -= shares[index]
        weight_left -= weights[index]
    return shares


# --- Fiedler ---------------------------------------------------------------------------------


class FiedlerStoredDict(RedactionCounts):
    result_id: str
    id: str  # the same as result_id, kept for older clients
    correlation_id: str
    created_at: str
    prompt_redacted: bool


class FiedlerResultDict(TypedDict):
    result_id: str
    id: str  # the same as result_id, kept for older clients
    correlation_id: str
    model: str
    prompt: str | None
    output: str
    tokens_prompt: int | None
    tokens_completion: int | None
    duration_seconds: float | None
    status: str
    error_message: str | None
    metadata: dict[str, Any] | None
    conversation_id: str | None
    created_at: str


class FiedlerCorrelationDict(TypedDict):
    correlation_id: str
    results: list[FiedlerResultDict]


class FiedlerBatchDict(RedactionCounts):
    stored: int
    results: list[FiedlerStoredDict]


class FiedlerQueryDict(TypedDict):
    results: list[FiedlerResultDict]
    total: int
    total_is_estimate: bool
    limit: int
    offset: int


def fiedler_stored_dict(result: FiedlerResult) -> FiedlerStoredDict:
    return {
        "result_id": str(result.id),
        "id": str(result.id),
        "correlation_id": result.correlation_id,
        "created_at": result.created_at.isoformat(),
        "prompt_redacted": result.prompt is None,
    }


def fiedler_result_dict(result: FiedlerResult) -> FiedlerResultDict:
    return {
        "result_id": str(result.id),
        "id": str(result.id),
        "correlation_id": result.correlation_id,
        "model": result.model,
        "prompt": result.prompt,
        "output": result.output,
        "tokens_prompt": result.tokens_prompt,
        "tokens_completion": result.tokens_completion,
        "duration_seconds": result.duration_seconds,
        "status": result.status,
        "error_message": result.error_message,
        "metadata": result.metadata,
        "conversation_id": str(result.conversation_id) if result.conversation_id else None,
        "created_at": result.created_at.isoformat(),
    }


def fiedler_correlation_dict(correlation_id: str, results: list[FiedlerResult]) -> FiedlerCorrelationDict:
    return {"correlation_id": correlation_id, "results": [fiedler_result_dict(result) for result in results]}


def fiedler_batch_dict(results: list[FiedlerResult]) -> FiedlerBatchDict:
    return {"stored": len(results), "results": [fiedler_stored_dict(result) for result in results]}


def fiedler_query_dict(
    results: list[FiedlerResult], total: int, estimate: bool, limit: int, offset: int
) -> FiedlerQueryDict:
    return {
        "results": [fiedler_result_dict(r) for r in results],
        "total": total,
        "total_is_estimate": estimate,
        "limit": limit,
        "offset": offset,
    }
