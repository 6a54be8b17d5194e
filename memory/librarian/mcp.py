"""MCP tools of the answer cache (seed 002 §9): validate the shape, call memory.librarian.services."""

from typing import Any

from core.mcp import McpRegistry, read_tool, service_tool
from memory.librarian import inputs, outputs, services


@read_tool
@inputs.ASK.tool
def librarian_ask(**given: Any) -> outputs.AskDict:
    """Ask Winni a question. Answers from the cache when the same question (exact) or a
    paraphrase (semantic) was answered before, otherwise from Winni's stored knowledge
    (retrieved passages with their sources). Says whether the answer was cached, its tier,
    ask count and confidence. project (an existing project's slug or name): that project's
    cached answers first, then the global ones, and a miss answers from that project's rows."""
    return outputs.ask_dict(services.librarian_ask(**given))


@service_tool
@inputs.REMEMBER.tool
def librarian_remember(**given: Any) -> outputs.RememberedDict:
    """Cache an answer for a question (in project, or global). pin=true: never evicted and never
    expires."""
    entry, created = services.librarian_remember(**given)
    return outputs.remembered_dict(entry, created)


@service_tool
@inputs.FORGET.tool
def librarian_forget(**given: Any) -> outputs.ForgottenDict:
    """Remove a question and its cached answer from the cache (project's entry, or the global one)."""
    return outputs.forgotten_dict(services.librarian_forget(**given))


@service_tool
@inputs.FEEDBACK.tool
def librarian_feedback(**given: Any) -> outputs.FeedbackDict:
    """Say whether the answer to a question helped (project's entry, or the global one); adjusts its
    confidence. Repeated unhelpful feedback drops the cached answer."""
    entry, dropped = services.librarian_feedback(**given)
    return outputs.feedback_dict(entry, dropped)


@read_tool
def librarian_memory_stats() -> outputs.StatsDict:
    """Cache statistics: hit rate (overall and last 24 h), exact vs semantic hits, tier
    distribution, entries, bytes per cached answer, time saved."""
    return services.librarian_memory_stats()


MCP = McpRegistry(tools=[
    librarian_ask,
    librarian_remember,
    librarian_forget,
    librarian_feedback,
    librarian_memory_stats,
])
