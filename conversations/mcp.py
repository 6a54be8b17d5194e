"""MCP tools for conversations: validate the shape (pydantic, via the SDK), call a service,
return the seed's shape."""
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from conversations import outputs, services
from conversations.services.messages import READ_MAX_CHARS
from core.mcp import McpRegistry, read_tool, service_tool

RoleName = Literal["user", "assistant", "system", "tool"]
StatusName = Literal["success", "error"]
Limit = Field(default=20, ge=1, le=100)
Offset = Field(default=0, ge=0)


class BulkMessage(BaseModel):
    """One message of a bulk store; its turn follows the array order."""

    model_config = ConfigDict(extra="forbid")
    role: RoleName
    content: str
    metadata: dict[str, Any] | None = None
    created_at: str | None = Field(default=None, description="ISO 8601; defaults to now (set it when importing)")


@service_tool
def dewey_begin_conversation(
    session_id: str | None = None, metadata: dict[str, Any] | None = None, project: str | None = None
) -> outputs.BegunDict:
    """Start a conversation and get its id; use that id for every message of the session.
    project: an existing project's slug or name (see winni_projects); omitted: global."""
    return outputs.begun_dict(services.conversation_begin(session_id=session_id, metadata=metadata, project=project))


@service_tool
def dewey_store_message(
    conversation_id: str,
    role: RoleName,
    content: str,
    turn_number: int | None = Field(default=None, ge=1),
    metadata: dict[str, Any] | None = None,
    created_at: str | None = None,
) -> outputs.StoredMessageDict:
    """Store one message. The server assigns the next turn number when turn_number is omitted;
    an existing turn number is a conflict. created_at (ISO 8601) defaults to now."""
    message = services.message_store(
        conversation_id=conversation_id,
        role=role,
        content=content,
        turn_number=turn_number,
        metadata=metadata,
        created_at=created_at,
    )
    return outputs.stored_message_dict(message)


@read_tool
def dewey_get_conversation(conversation_id: str, turn_from: int | None = None, turn_to: int | None = None,
                           max_chars: int = READ_MAX_CHARS) -> outputs.ConversationDict:
    """A conversation's messages in turn order, or turns turn_from to turn_to (inclusive). Long
    messages are cut to fit max_chars of JSON; one turn (turn_from = turn_to) comes whole."""
    conversation, messages = services.conversation_get(conversation_id=conversation_id, turn_from=turn_from,
                                                       turn_to=turn_to, max_chars=max_chars)
    return outputs.conversation_dict(conversation, messages, max_chars)


@service_tool
def dewey_store_messages_bulk(
    messages: list[BulkMessage],
    conversation_id: str | None = None,
    session_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    project: str | None = None,
) -> outputs.BulkStoredDict:
    """Store many messages at once, atomically (all or none); turns follow the array order.
    Without conversation_id a new conversation is created (with session_id, metadata and project,
    an existing project's slug or name). Each message may carry its own created_at (ISO 8601) for
    imports."""
    conversation, stored = services.messages_store_bulk(
        messages=[message.model_dump() for message in messages],
        conversation_id=conversation_id,
        session_id=session_id,
        metadata=metadata,
        project=project,
    )
    return outputs.bulk_stored_dict(conversation, stored)


@read_tool
def dewey_list_conversations(
    session_id: str | None = None,
    limit: int = Limit,
    offset: int = Offset,
    sort_by: Literal["created_at", "updated_at"] = "updated_at",
    project: str | None = None,
) -> outputs.ConversationListDict:
    """List conversations newest first (by updated_at or created_at), optionally only one
    session's or one project's, with message_count per conversation and the total."""
    page, total, estimate = services.conversation_list(
        session_id=session_id, limit=limit, offset=offset, sort_by=sort_by, project=project
    )
    return outputs.conversation_list_dict(page, total, estimate, limit, offset)


@service_tool
def dewey_delete_conversation(conversation_id: str, force: bool = False) -> outputs.DeletedDict:
    """Delete a conversation and all its messages. Refuses unless force is true."""
    deleted = services.conversation_delete(conversation_id=conversation_id, force=force)
    return outputs.deleted_dict(conversation_id, deleted)


@read_tool
def dewey_search(
    query: str,
    session_id: str | None = None,
    conversation_id: str | None = None,
    role: RoleName | None = None,
    start_date: str | None = None,
    end_date: str | None = None,
    limit: int = Limit,
    offset: int = Offset,
    context_lines: int = Field(default=2, ge=0, le=10),
    mode: Literal["fts", "semantic", "hybrid"] | None = None,
    project: str | None = None,
    as_of: str | None = None,
    recency: float | None = None,
    max_chars: int = READ_MAX_CHARS,
) -> outputs.SearchPageDict:
    """Search past messages; each hit with context_lines turns around it. mode: hybrid (default),
    fts or semantic; "a phrase", -word. Dates ISO 8601. Time words ("last week") are read as of
    as_of; recency: a half-life in days. Long messages are cut to fit max_chars of JSON."""
    page = services.message_search(
        query=query,
        session_id=session_id,
        conversation_id=conversation_id,
        role=role,
        start_date=start_date,
        end_date=end_date,
        limit=limit,
        offset=offset,
        context_lines=context_lines,
        mode=mode,
        project=project,
        as_of=as_of,
        recency=recency,
        max_chars=max_chars,
    )
    return outputs.search_page_dict(page)


@service_tool
def dewey_store_fiedler_result(
    correlation_id: str,
    model: str,
    output: str,
    prompt: str | None = None,
    tokens_prompt: int | None = Field(default=None, ge=0),
    tokens_completion: int | None = Field(default=None, ge=0),
    duration_seconds: float | None = Field(default=None, ge=0),
    status: StatusName = "success",
    error_message: str | None = None,
    metadata: dict[str, Any] | None = None,
    conversation_id: str | None = None,
    redact: bool = False,
) -> outputs.FiedlerStoredDict:
    """Store one model's result of an orchestration run under its correlation id.
    redact=true (or the server's WINNI_REDACT_PROMPTS) stores no prompt."""
    result = services.fiedler_result_store(
        correlation_id=correlation_id,
        model=model,
        output=output,
        prompt=prompt,
        tokens_prompt=tokens_prompt,
        tokens_completion=tokens_completion,
        duration_seconds=duration_seconds,
        status=status,
        error_message=error_message,
        metadata=metadata,
        conversation_id=conversation_id,
        redact=redact,
    )
    return outputs.fiedler_stored_dict(result)


@read_tool
def dewey_get_fiedler_results(correlation_id: str) -> outputs.FiedlerCorrelationDict:
    """Every model's result for one correlation id, oldest first."""
    results = services.fiedler_results_for_correlation(correlation_id=correlation_id)
    return outputs.fiedler_correlation_dict(correlation_id, results)


@read_tool
def dewey_query_fiedler_results(
    model: str | None = None,
    status: StatusName | None = None,
    text: str | None = None,
    start_date: str | None = None,
    end_date: str | None = None,
    limit: int = Limit,
    offset: int = Offset,
    project: str | None = None,
) -> outputs.FiedlerQueryDict:
    """Orchestration results filtered by model, status, date range (ISO 8601; a date alone covers the whole day), words in the
    prompt or output (web-search syntax) and project (of the linked conversation), newest first,
    with the total."""
    results, total, estimate = services.fiedler_results_query(
        model=model, status=status, text=text, start_date=start_date, end_date=end_date, limit=limit, offset=offset,
        project=project,
    )
    return outputs.fiedler_query_dict(results, total, estimate, limit, offset)


MCP = McpRegistry(tools=[
    dewey_begin_conversation,
    dewey_store_message,
    dewey_get_conversation,
    dewey_store_messages_bulk,
    dewey_list_conversations,
    dewey_delete_conversation,
    dewey_search,
    dewey_store_fiedler_result,
    dewey_get_fiedler_results,
    dewey_query_fiedler_results,
])
