"""Semantic memories, embeddings, and the answer cache ("Librarian")."""
