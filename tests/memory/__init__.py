"""Tests of memory/: memories, the embedding pipeline and its providers, vectors and ranking."""
