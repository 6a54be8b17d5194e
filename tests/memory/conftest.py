"""What the ranking tests read off the statements a search sends to PostgreSQL (Django's
CaptureQueriesContext on this thread's connection) instead of patching memory's private functions:
which vector searches ran on this connection, and how each read the vectors."""
from __future__ import annotations

import contextlib
from typing import Callable, ContextManager, Iterator

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

# Every vector search (memory.vectors) ranks by pgvector's cosine distance operator; nothing else does.
VECTOR_DISTANCE = "<=>"


def vector_read(sql: str) -> str:
    """How a vector search statement read the vectors: "exact" when it ranked a known set of rows
    by their computed distance (the scope's keys, the scope joined in, or the projects' rows
    ordered by distance), "walk" when it walked an HNSW index (the kind's, keeping the projects'
    rows as it went, or a project's own) in the index's order."""
    if " walked WHERE " in sql:
        return "walk"
    if "object_id = ANY(" in sql or "object_id IN (" in sql or "ORDER BY distance" in sql:
        return "exact"
    return "walk"


@pytest.fixture
def vector_reads() -> Callable[[], ContextManager[list[str]]]:
    """`with vector_reads() as reads:` … the list, filled when the block ends, of how each vector
    search this thread's connection ran inside it read the vectors (vector_read), in order."""

    @contextlib.contextmanager
    def recording() -> Iterator[list[str]]:
        reads: list[str] = []
        with CaptureQueriesContext(connection) as queries:
            yield reads
        reads += [vector_read(q["sql"]) for q in queries.captured_queries if VECTOR_DISTANCE in q["sql"]]

    return recording
