"""MCP tools for conversations: validate the shape (pydantic, via the SDK), call a service,
return the seed's shape."""
from typing import Any

from conversations import inputs, outputs, services
from core.mcp import McpRegistry, read_tool, service_tool


@service_tool
@inputs.BEGIN.tool
def dewey_begin_conversation(**given: Any) -> outputs.BegunDict:
    """Start a conversation and get its id; use that id for every message of the session.
    project: an existing project's slug or name (see winni_projects); omitted: global."""
    return outputs.begun_dict(services.conversation_begin(**given))


@service_tool
@inputs.STORE_MESSAGE.tool
def dewey_store_message(**given: Any) -> outputs.StoredMessageDict:
    """Store one message. The server assigns the next turn number when turn_number is omitted;
    an existing turn number is a conflict. created_at (ISO 8601) defaults to now."""
    return outputs.stored_message_dict(services.message_store(**given))


@read_tool
@inputs.GET_CONVERSATION.tool
def dewey_get_conversation(**given: Any) -> outputs.ConversationDict:
    """A conversation's messages in turn order, or turns turn_from to turn_to (inclusive). Long
    messages are cut to fit max_chars of JSON; one turn (turn_from = turn_to) comes whole.
    conversation_id: its id, or the first 8 hex digits of it as automatic recall names it."""
    conversation, messages = services.conversation_get(**given)
    return outputs.conversation_dict(conversation, messages, given["max_chars"])


@service_tool
@inputs.STORE_MESSAGES_BULK.tool
def dewey_store_messages_bulk(**given: Any) -> outputs.BulkStoredDict:
    """Store many messages at once, atomically (all or none); turns follow the array order.
    Without conversation_id a new conversation is created (with session_id, metadata and project,
    an existing project's slug or name). Each message may carry its own created_at (ISO 8601) for
    imports."""
    messages = [message.model_dump() for message in given.pop("messages")]
    conversation, stored = services.messages_store_bulk(messages=messages, **given)
    return outputs.bulk_stored_dict(conversation, stored)


@read_tool
@inputs.LIST_CONVERSATIONS.tool
def dewey_list_conversations(**given: Any) -> outputs.ConversationListDict:
    """List conversations newest first (by updated_at or created_at), optionally only one
    session's or one project's, with message_count per conversation and the total."""
    page, total, estimate = services.conversation_list(**given)
    return outputs.conversation_list_dict(page, total, estimate, given["limit"], given["offset"])


@service_tool
@inputs.DELETE.tool
def dewey_delete_conversation(**given: Any) -> outputs.DeletedDict:
    """Delete a conversation and all its messages. Refuses unless force is true."""
    return outputs.deleted_dict(given["conversation_id"], services.conversation_delete(**given))


@read_tool
@inputs.SEARCH.tool
def dewey_search(**given: Any) -> outputs.SearchPageDict:
    """Search past messages; each hit with context_lines turns around it. mode: hybrid (default),
    fts or semantic; "a phrase", -word. Dates ISO 8601. Time words ("last week") are read as of
    as_of; recency: a half-life in days. Long messages are cut to fit max_chars of JSON."""
    return outputs.search_page_dict(services.message_search(**given))


@service_tool
@inputs.STORE_FIEDLER_RESULT.tool
def dewey_store_fiedler_result(**given: Any) -> outputs.FiedlerStoredDict:
    """Store one model's result of an orchestration run under its correlation id.
    redact=true (or the server's WINNI_REDACT_PROMPTS) stores no prompt."""
    return outputs.fiedler_stored_dict(services.fiedler_result_store(**given))


@read_tool
@inputs.GET_FIEDLER_RESULTS.tool
def dewey_get_fiedler_results(**given: Any) -> outputs.FiedlerCorrelationDict:
    """Every model's result for one correlation id, oldest first."""
    results = services.fiedler_results_for_correlation(correlation_id=given["correlation_id"])
    return outputs.fiedler_correlation_dict(given["correlation_id"], results)


@read_tool
@inputs.QUERY_FIEDLER_RESULTS.tool(without=["correlation_id"])
def dewey_query_fiedler_results(**given: Any) -> outputs.FiedlerQueryDict:
    """Orchestration results filtered by model, status, date range (ISO 8601; a date alone covers the whole day), words in the
    prompt or output (web-search syntax) and project (of the linked conversation), newest first,
    with the total."""
    results, total, estimate = services.fiedler_results_query(**given)
    return outputs.fiedler_query_dict(results, total, estimate, given["limit"], given["offset"])


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
