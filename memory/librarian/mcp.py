"""MCP tools of the answer cache (seed 002 §9): validate the shape, call memory.librarian.services."""

from core.mcp import McpRegistry, service_tool
from memory.librarian import outputs, services


@service_tool
def librarian_ask(query: str) -> outputs.AskDict:
    """Ask Winni a question. Answers from the cache when the same question (exact) or a
    paraphrase (semantic) was answered before, otherwise from Winni's stored knowledge
    (retrieved passages with their sources). Says whether the answer was cached, its tier,
    ask count and confidence."""
    return outputs.ask_dict(services.librarian_ask(query=query))


@service_tool
def librarian_remember(query: str, answer: str, pin: bool = False) -> outputs.RememberedDict:
    """Cache an answer for a question. pin=true: never evicted and never expires."""
    entry, created = services.librarian_remember(query=query, answer=answer, pin=pin)
    return outputs.remembered_dict(entry, created)


@service_tool
def librarian_forget(query: str) -> outputs.ForgottenDict:
    """Remove a question and its cached answer from the cache."""
    return outputs.forgotten_dict(services.librarian_forget(query=query))


@service_tool
def librarian_feedback(query: str, helpful: bool) -> outputs.FeedbackDict:
    """Say whether the answer to a question helped; adjusts its confidence. Repeated unhelpful
    feedback drops the cached answer."""
    entry, dropped = services.librarian_feedback(query=query, helpful=helpful)
    return outputs.feedback_dict(entry, dropped)


@service_tool
def librarian_memory_stats() -> outputs.StatsDict:
    """Cache statistics: hit rate (overall and last 24 h), exact vs semantic hits, tier
    distribution, entries, bytes per cached answer, time saved."""
    return services.librarian_memory_stats()  # type: ignore[return-value]


MCP = McpRegistry(tools=[
    librarian_ask,
    librarian_remember,
    librarian_forget,
    librarian_feedback,
    librarian_memory_stats,
])
