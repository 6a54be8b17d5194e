"""The answer cache's key ignores trailing sentence punctuation ("…amounts?" is "…amounts"), and
the migration rehashes and merges the entries stored under the old key."""
from __future__ import annotations

import hashlib
from importlib import import_module
from typing import Any

import pytest
from django.apps import apps

from memory.librarian import services as librarian
from memory.librarian.models import QueryMemory, Tier

pytestmark = pytest.mark.django_db

MONEY = "how do we store money amounts"


@pytest.mark.parametrize(("asked", "same"), [
    ("How do we store money amounts?", True),
    ("how do we store money amounts", True),
    ("How do we store money amounts ?!", True),
    ("How do we store money amounts…", True),
    ("How do we store money amounts？", True),
    ("How do we store money amount?", False),
    ("How do we store money amounts in C#?", False),
])
def test_trailing_punctuation_does_not_change_the_key(asked: str, same: bool):
    assert (librarian.query_hash(asked) == librarian.query_hash(MONEY)) is same


def test_marks_that_belong_to_a_word_are_kept():
    assert librarian.normalize_query("What is C#?") == "what is c#"
    assert librarian.normalize_query("Is C++ faster than C?") == "is c++ faster than c"
    assert librarian.normalize_query("Which is newer, 2.5 or 2.10?") == "which is newer, 2.5 or 2.10"
    assert librarian.normalize_query("?!") == "?!"  # all punctuation: kept as it is


def test_a_remembered_answer_is_an_exact_hit_with_or_without_the_question_mark():
    librarian.librarian_remember(query="How do we store money amounts?", answer="Integer cents plus a currency.")
    result = librarian.librarian_ask(query="how do we store money amounts")
    assert result.match == "exact" and result.answer == "Integer cents plus a currency."
    assert QueryMemory.objects.count() == 1


def _old_key(query: str) -> str:
    return hashlib.sha256(" ".join(query.strip().lower().split()).encode()).hexdigest()


def test_the_migration_rehashes_and_merges_entries_stored_under_the_old_key(transactional_db: Any):
    from core import projects

    app = projects.project_create(name="app")
    QueryMemory.objects.create(query_hash=_old_key("How do we store money amounts?"),
                               query_text="How do we store money amounts?", ask_count=2, cache_hits=1,
                               tier=Tier.WARM, answer=None)
    QueryMemory.objects.create(query_hash=_old_key("how do we store money amounts"),
                               query_text="how do we store money amounts", ask_count=5, cache_hits=3,
                               tier=Tier.HOT, answer="Integer cents.", feedback_positive=1)
    # The same question in a project is another scope: not merged with the global ones.
    QueryMemory.objects.create(query_hash=_old_key("How do we store money amounts?"), project=app,
                               query_text="How do we store money amounts?", ask_count=1, answer="Per project.")
    QueryMemory.objects.create(query_hash=_old_key("Where are backups?"), query_text="Where are backups?")
    migration = import_module("memory.librarian.migrations.0003_query_key_without_trailing_punctuation")
    migration.rehash(apps, None)

    global_money = QueryMemory.objects.get(project=None, query_hash=librarian.query_hash(MONEY))
    assert (global_money.answer, global_money.ask_count, global_money.cache_hits) == ("Integer cents.", 7, 4)
    assert global_money.tier == Tier.HOT and global_money.feedback_positive == 1
    assert QueryMemory.objects.get(project=app).query_hash == librarian.query_hash(MONEY)
    backups = QueryMemory.objects.get(query_text="Where are backups?")
    assert backups.query_hash == librarian.query_hash("where are backups")
    assert QueryMemory.objects.count() == 3
    assert librarian.librarian_ask(query="How do we store money amounts?").answer == "Integer cents."
