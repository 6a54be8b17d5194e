"""Automatic recall's MCP tool: winni_context, the block the hooks add to a prompt, asked for
directly (the service is agents.autorecall.context_for_prompt)."""
from agents.autorecall import ContextDict, context_for_prompt
from core.mcp import McpRegistry, read_tool


@read_tool
def winni_context(
    prompt: str,
    project: str | None = None,
    session_id: str | None = None,
    max_chars: int | None = None,
    as_of: str | None = None,
    project_only: bool = False,
) -> ContextDict:
    """What Winni knows about a prompt, as the short block automatic recall adds to it: memories,
    the project's active decisions, invariants and open questions, past turns of other sessions and
    a cached answer to the same question, each with its source (kind, id, date, session, turn).
    Empty (text "") when nothing is relevant enough (see gate). project: a project's slug or name
    (unknown or none: the whole store); its memories come with the global ones (no project) unless
    project_only. session_id: leaves out that session's own turns and what was
    already given to it (then records what it gives). max_chars 200-50000 (default
    WINNI_RECALL_INJECT_MAX_CHARS). Time words in the prompt ("what did we decide last week") are
    read relative to as_of (ISO 8601, default now) and rank items of that time higher, as in
    winni_recall; time_filter in the result says what was understood and done."""
    return context_for_prompt(prompt=prompt, project=project, session_id=session_id, max_chars=max_chars,
                              as_of=as_of, project_only=project_only)


MCP = McpRegistry(tools=[winni_context])
