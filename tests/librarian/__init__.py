"""Tests of memory/librarian/, the answer cache (an app of its own, label "librarian")."""
