"""Conversations' business layer, which every interface (MCP, REST, admin, capture, tasks) calls,
by topic: messages (conversations, their messages, lists and deletes), search (dewey_search and
what a message is to search) and fiedler (orchestration results). The names callers use are
importable from here."""
from conversations.services.fiedler import (
    fiedler_result_delete,
    fiedler_result_store,
    fiedler_results_for_correlation,
    fiedler_results_query,
    fiedler_results_store_batch,
)
from conversations.services.messages import (
    MAX_BULK_MESSAGES,
    conversation_begin,
    conversation_delete,
    conversation_get,
    conversation_list,
    conversation_roots,
    conversation_set_project,
    message_store,
    messages_store_bulk,
)
from conversations.services.passages import message_passages
from conversations.services.search import (
    SearchHit,
    SearchPage,
    message_display,
    message_embed_parts,
    message_embedding_text,
    message_fts_ranked,
    message_parts,
    message_search,
    message_search_filters,
    message_surroundings,
)

__all__ = [
    "MAX_BULK_MESSAGES",
    "SearchHit",
    "SearchPage",
    "conversation_begin",
    "conversation_delete",
    "conversation_get",
    "conversation_list",
    "conversation_roots",
    "conversation_set_project",
    "fiedler_result_delete",
    "fiedler_result_store",
    "fiedler_results_for_correlation",
    "fiedler_results_query",
    "fiedler_results_store_batch",
    "message_display",
    "message_embed_parts",
    "message_embedding_text",
    "message_fts_ranked",
    "message_parts",
    "message_passages",
    "message_search",
    "message_search_filters",
    "message_store",
    "message_surroundings",
    "messages_store_bulk",
]
