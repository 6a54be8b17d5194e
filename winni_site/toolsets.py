"""The MCP tool sets WINNI_MCP_TOOLSETS chooses from (read by the settings, so no Django here).

Every tool an MCP server lists is read by the agent's model at the start of every session: the
30 tools' `tools/list` was 40,809 characters (≈ 10,200 tokens), most of them for tools an agent
never calls in a session (storing turns by hand, Fiedler results, editing or deleting startup
contexts, administering the answer cache). The default set is what an agent uses inside a
session; the others are opt-in, by name. tests/core/test_mcp_tools.py checks that every registered
tool is in exactly one set."""
from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

TOOLSETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "default": ("what an agent uses in a session: recall, search, memories, medallions, the startup context", (
        "winni_recall", "winni_get", "winni_context", "winni_projects", "dewey_search", "dewey_get_conversation",
        "dewey_get_startup_context", "store_memory", "update_memory", "search_memory", "memory_history",
        "medallion_load_for_scope", "medallion_get", "medallion_checkpoint_session", "medallion_job_status",
        "winni_item_confirm",
    )),
    "conversations": ("storing and listing conversations by hand, which the hooks already do", (
        "dewey_begin_conversation", "dewey_store_message", "dewey_store_messages_bulk", "dewey_list_conversations",
    )),
    "contexts": ("writing and listing startup contexts", ("dewey_set_startup_context", "dewey_list_startup_contexts")),
    "fiedler": ("the multi-model orchestrator Fiedler's results", (
        "dewey_store_fiedler_result", "dewey_get_fiedler_results", "dewey_query_fiedler_results",
    )),
    "cache": ("the answer cache: asking it (winni_context already gives its answers) and administering it", (
        "librarian_ask", "librarian_remember", "librarian_forget", "librarian_feedback", "librarian_memory_stats",
    )),
    "delete": ("deleting conversations and startup contexts", ("dewey_delete_conversation", "dewey_delete_startup_context")),
}
ALL = "all"  # every set


def parse_toolsets(names: list[str]) -> tuple[str, ...]:
    """The sets named (WINNI_MCP_TOOLSETS), `all` for every one; an unknown name stops start-up
    with a message listing the sets."""
    chosen: list[str] = []
    for name in (name.strip().lower() for name in names):
        if name == ALL:
            chosen += list(TOOLSETS)
        elif name in TOOLSETS:
            chosen.append(name)
        elif name:
            listed = "; ".join(f"{key} ({about})" for key, (about, _) in TOOLSETS.items())
            raise ImproperlyConfigured(f"WINNI_MCP_TOOLSETS: no tool set named {name!r}; the sets are {listed}; "
                                       f"{ALL}: every set")
    if not chosen:
        raise ImproperlyConfigured(f"WINNI_MCP_TOOLSETS names no set; the sets are {', '.join(TOOLSETS)} (or {ALL})")
    return tuple(dict.fromkeys(chosen))


def tool_names(sets: tuple[str, ...]) -> set[str]:
    return {tool for name in sets for tool in TOOLSETS[name][1]}
