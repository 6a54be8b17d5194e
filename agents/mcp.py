"""Automatic recall's MCP tool: winni_context, the block the hooks add to a prompt, asked for
directly (the service is agents.autorecall.context_for_prompt)."""
from typing import Any

from agents.autorecall import ContextDict, context_for_prompt
from agents.inputs import CONTEXT
from core.mcp import McpRegistry, read_tool


@read_tool
@CONTEXT.tool
def winni_context(**given: Any) -> ContextDict:
    """What Winni knows about a prompt, as a short block citing its sources; text "" when nothing
    is relevant. With session_id, nothing given twice in a session. Time words read as of as_of."""
    return context_for_prompt(**given)


MCP = McpRegistry(tools=[winni_context])
