"""Semantic memories, embeddings, and the answer cache ("Librarian")."""
from memory.librarian_models import LibrarianHourlyStats, QueryMemory  # noqa: E402,F401
