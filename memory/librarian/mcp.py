"""MCP tools of the answer cache (seed 002 §9): validate the shape, call memory.librarian.services."""

from core.mcp import McpRegistry, read_tool, service_tool
from memory.librarian import outputs, services


@read_tool
def librarian_ask(query: str, project: str | None = None) -> outputs.AskDict:
    """Ask Winni a question. Answers from the cache when the same question (exact) or a
    paraphrase (semantic) was answered before, otherwise from Winni's stored knowledge
    (retrieved passages with their sources). Says whether the answer was cached, its tier,
    ask count and confidence. project (an existing project's slug or name): that project's
    cached answers first, then the global ones, and a miss answers from that project's rows."""
    return outputs.ask_dict(services.librarian_ask(query=query, project=project))


@service_tool
def librarian_remember(query: str, answer: str, pin: bool = False, project: str | None = None) -> outputs.RememberedDict:
    """Cache an answer for a question (in project, or global). pin=true: never evicted and never
    expires."""
    entry, created = services.librarian_remember(query=query, answer=answer, pin=pin, project=project)
    return outputs.remembered_dict(entry, created)


@service_tool
def librarian_forget(query: str, project: str | None = None) -> outputs.ForgottenDict:
    """Remove a question and its cached answer from the cache (project's entry, or the global one)."""
    return outputs.forgotten_dict(services.librarian_forget(query=query, project=project))


@service_tool
def librarian_feedback(query: str, helpful: bool, project: str | None = None) -> outputs.FeedbackDict:
    """Say whether the answer to a question helped (project's entry, or the global one); adjusts its
    confidence. Repeated unhelpful feedback drops the cached answer."""
    entry, dropped = services.librarian_feedback(query=query, helpful=helpful, project=project)
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
