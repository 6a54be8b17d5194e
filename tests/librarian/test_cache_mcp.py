"""The answer cache's MCP tools through the real streamable-HTTP transport."""
import pytest

from memory.librarian.models import QueryMemory

pytestmark = pytest.mark.live

TOOLS = {"librarian_ask", "librarian_remember", "librarian_forget", "librarian_feedback", "librarian_memory_stats"}


def test_cache_tools_round_trip(mcp):
    assert TOOLS <= set(mcp.list_tools())
    remembered = mcp.call("librarian_remember", {"query": "How do I run the test suite?", "answer": "pytest -q"})
    assert (remembered["created"], remembered["cache_tier"], remembered["pinned"]) == (True, "warm", False)
    exact = mcp.call("librarian_ask", {"query": "how do i run the test suite?"})
    assert (exact["match"], exact["cached"], exact["answer"], exact["ask_count"]) == ("exact", True, "pytest -q", 1)
    # The query vector was made by the Celery task after the remember committed.
    semantic = mcp.call("librarian_ask", {"query": "How can I run the test suite?"})
    assert (semantic["match"], semantic["answer"]) == ("semantic", "pytest -q")
    assert semantic["similarity"] > 0.85 and semantic["matched_query"] == "How do I run the test suite?"
    negated = mcp.call("librarian_ask", {"query": "How do I not run the test suite?"})
    assert (negated["match"], negated["cached"], negated["cache_tier"], negated["ask_count"]) == ("miss", False, "cold", 1)
    feedback = mcp.call("librarian_feedback", {"query": "How do I run the test suite?", "helpful": True})
    assert feedback["confidence"] == 1.0 and feedback["feedback_positive"] == 1
    stats = mcp.call("librarian_memory_stats")
    assert (stats["asks"], stats["exact_hits"], stats["semantic_hits"], stats["misses"]) == (3, 1, 1, 1)
    assert stats["tiers"]["warm"] == 1 and stats["tiers"]["cold"] == 1
    assert mcp.call("librarian_forget", {"query": "How do I run the test suite?"})["forgotten"] is True
    assert QueryMemory.objects.count() == 1


def test_cache_tool_errors(mcp_legacy):
    assert "query" in mcp_legacy.call_error("librarian_ask", {"query": " "})
    assert "not_found" in mcp_legacy.call_error("librarian_forget", {"query": "never asked"})
    assert "not_found" in mcp_legacy.call_error("librarian_feedback", {"query": "never asked", "helpful": False})
    too_large = mcp_legacy.call_error("librarian_remember", {"query": "q", "answer": "x" * (1024 * 1024 + 1)})
    assert "too_large" in too_large and "answer" in too_large
    assert "pinned" in mcp_legacy.call_error("librarian_remember", {"query": "q", "answer": "a", "pinned": True})
    assert not QueryMemory.objects.exists()
