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
    """What Winni knows about a prompt, as a short block citing its sources; text "" when nothing
    is relevant. With session_id, nothing given twice in a session. Time words read as of as_of."""
    return context_for_prompt(prompt=prompt, project=project, session_id=session_id, max_chars=max_chars,
                              as_of=as_of, project_only=project_only)


MCP = McpRegistry(tools=[winni_context])
