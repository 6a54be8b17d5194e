"""The answer cache's service layer (memory.librarian) against real PostgreSQL and the real
all-MiniLM-L6-v2 embeddings: lookup, tiers, cache decision, guard, TTL, eviction, feedback, stats."""
import datetime as dt
import json

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from conversations import services as conversations
from core.errors import InvalidInput, NotFound, PayloadTooLarge
from memory.librarian import services as librarian
from memory.librarian.models import LibrarianHourlyStats, QueryMemory

pytestmark = pytest.mark.django_db

@pytest.fixture(autouse=True)
def real_model(settings):
    """Semantic matching is what these tests check: the real all-MiniLM-L6-v2, not the stand-in."""
    settings.WINNI_EMBEDDING_PROVIDER = "local"
    settings.WINNI_EMBEDDING_MODEL = "all-MiniLM-L6-v2"


DB_QUESTION = "How do I configure the database connection?"
DB_PARAPHRASE = "How can I configure the database connection?"
# What a current query vector is tagged with: the model and the canonical query form.
VECTOR_TAG = "all-MiniLM-L6-v2+canonical-1"


@pytest.fixture
def knowledge(db):
    """Stored conversation turns a miss can answer from."""
    cid = conversations.conversation_begin(session_id="s1").id
    conversations.message_store(conversation_id=cid, role="user", content="How do we point Winni at Postgres?")
    conversations.message_store(
        conversation_id=cid, role="assistant",
        content="Set DATABASE_URL to postgresql://user:pass@host/db; without it Winni starts its embedded database.",
    )
    return cid


@pytest.fixture
def remembered(django_capture_on_commit_callbacks):
    """A remembered answer whose query vector was made by the (eager) Celery task after commit."""
    with django_capture_on_commit_callbacks(execute=True):
        entry, created = librarian.librarian_remember(query=DB_QUESTION, answer="Set DATABASE_URL.")
    assert created
    entry.refresh_from_db()
    return entry


def test_normalisation_ignores_case_spacing_and_trailing_punctuation():
    assert librarian.normalize_query("  How   DO\tI  run\nthe tests? ") == "how do i run the tests"
    assert librarian.query_hash("How do I run the tests?") == librarian.query_hash(" how do  i run the TESTS? ")
    assert librarian.query_hash("How do I run the tests?") == librarian.query_hash("How do I run the tests")
    assert librarian.query_hash("How do I run the tests?") != librarian.query_hash("How do I run the test?")


def test_tiers_follow_the_ask_count():
    assert [librarian.tier_for(n) for n in (1, 2, 3, 4, 9, 10, 50)] == [
        "cold", "warm", "warm", "hot", "hot", "core", "core"]


def test_a_first_miss_answers_from_stored_conversations_and_tracks_the_query(knowledge):
    result = librarian.librarian_ask(query="How do I set the DATABASE_URL?")
    assert (result.match, result.cached) == ("miss", False)
    assert "DATABASE_URL to postgresql://" in result.answer
    assert result.answer.startswith("Retrieved from Winni's memory")
    assert result.sources and result.sources[0]["conversation_id"] == str(knowledge)
    entry = QueryMemory.objects.get()
    assert (entry.ask_count, entry.tier, entry.answer, entry.embedding_model) == (1, "cold", None, "")
    assert entry.compute_time_ms is not None


def test_the_third_ask_caches_and_the_fourth_is_an_exact_hit(knowledge):
    query = "How do I set the DATABASE_URL?"
    librarian.librarian_ask(query=query)
    second = librarian.librarian_ask(query=query)
    assert (second.match, second.entry.tier, second.entry.answer) == ("miss", "warm", None)
    # Entering warm stores the vector made for the L2 lookup.
    assert QueryMemory.objects.get().embedding_model == VECTOR_TAG
    third = librarian.librarian_ask(query=query)
    assert third.match == "miss" and third.entry.answer == third.answer
    assert third.entry.expires_at > timezone.now() + dt.timedelta(hours=23)
    fourth = librarian.librarian_ask(query="  how do i set the database_url?  ")
    assert (fourth.match, fourth.cached, fourth.similarity) == ("exact", True, 1.0)
    assert fourth.answer == third.answer
    entry = QueryMemory.objects.get()
    assert (entry.ask_count, entry.cache_hits, entry.tier) == (4, 1, "hot")


def test_cache_decision_rules(settings):
    entry = QueryMemory(query_hash="x", query_text="x", ask_count=1)
    assert not librarian.should_cache(entry, compute_time_ms=10, has_sources=True)
    entry.ask_count = 2
    assert not librarian.should_cache(entry, compute_time_ms=500, has_sources=True)
    assert librarian.should_cache(entry, compute_time_ms=501, has_sources=True)
    entry.ask_count = 3
    assert librarian.should_cache(entry, compute_time_ms=1, has_sources=True)
    assert not librarian.should_cache(entry, compute_time_ms=1, has_sources=False)
    entry.ask_count, entry.confidence = 1, 0.95
    assert librarian.should_cache(entry, compute_time_ms=1, has_sources=True)
    settings.LIBRARIAN_CACHE_THRESHOLD = 5
    entry.ask_count, entry.confidence = 4, None
    assert not librarian.should_cache(entry, compute_time_ms=1, has_sources=True)


def test_an_answer_that_found_nothing_is_never_cached(db):
    for _ in range(4):
        result = librarian.librarian_ask(query="what is the airspeed of an unladen swallow")
    assert (result.match, result.answer, result.confidence) == ("miss", librarian.NO_KNOWLEDGE_ANSWER, 0.0)
    entry = QueryMemory.objects.get()
    assert (entry.ask_count, entry.tier, entry.answer) == (4, "hot", None)


def test_a_paraphrase_is_a_semantic_hit(remembered):
    assert remembered.embedding_model == VECTOR_TAG and remembered.tier == "warm"
    result = librarian.librarian_ask(query=DB_PARAPHRASE)
    assert (result.match, result.cached, result.answer) == ("semantic", True, "Set DATABASE_URL.")
    assert result.similarity > 0.85
    assert result.entry.pk == remembered.pk
    remembered.refresh_from_db()
    assert (remembered.cache_hits, remembered.ask_count) == (1, 1)
    # The paraphrase itself is not recorded as an entry of its own.
    assert QueryMemory.objects.count() == 1


@pytest.mark.parametrize("query, canonical", [
    ("Hey, could you tell me how I can configure the database connection, please?",
     "how do i configure the database connection"),
    ("How to configure the database connection?", "how do i configure the database connection"),
    ("What's the way to rotate the shop's API keys?", "how do i rotate the shop api keys"),
    ("Which port does the server listen on?", "what port does the server listen on"),
    ("Is it possible to use OpenAI for embeddings?", "can i use openai for embeddings"),
    # Negations and numbers stay (the guard reads them from the original text as well).
    ("Why doesn't the worker start?", "why does not the worker start"),
    ("Can't I install Python 3.11 on 2026-11-21?", "can not i install python 3.11 on 2026-11-21"),
    ("What is the process for a hotfix?", "what is the process for a hotfix"),
    # Nothing but politeness: the form falls back rather than becoming empty.
    ("Please?", "please"),
])
def test_the_canonical_form_drops_wording_that_does_not_change_the_question(query, canonical):
    assert librarian.canonical_query(query) == canonical


def test_politeness_and_scaffolding_do_not_move_a_query_away_from_its_cached_question(remembered):
    """L2 compares canonical forms: a question wrapped in politeness is the cached one exactly."""
    result = librarian.librarian_ask(query="Hey, could you tell me how I can configure the database connection, please?")
    assert (result.match, result.answer, result.similarity) == ("semantic", "Set DATABASE_URL.", 1.0)


def test_vectors_of_another_query_form_are_refreshed_before_l2_uses_them(remembered):
    # As if embedded by a release whose canonical form (or model) was different.
    QueryMemory.objects.filter(pk=remembered.pk).update(embedding_model="all-MiniLM-L6-v2")
    assert librarian.librarian_ask(query=DB_PARAPHRASE).match == "miss"
    assert librarian.librarian_embed_stale() == 1
    assert QueryMemory.objects.get(pk=remembered.pk).embedding_model == VECTOR_TAG
    assert librarian.librarian_embed_stale() == 0
    assert librarian.librarian_ask(query=DB_PARAPHRASE).match == "semantic"


def test_the_beat_task_refreshes_stale_vectors(remembered):
    from memory.librarian.tasks import librarian_evict

    QueryMemory.objects.filter(pk=remembered.pk).update(embedding_model="")
    assert librarian_evict.delay().get() == {"expired": 0, "evicted": 0, "pruned": 0, "reembedded": 1}


@pytest.mark.parametrize("near_miss", [
    "How do I not configure the database connection?",
    "How don't I configure the database connection?",
    "How do I configure the 2 database connections?",
])
def test_the_guard_refuses_a_negated_or_numbered_near_miss(remembered, near_miss):
    result = librarian.librarian_ask(query=near_miss)
    assert result.match == "miss" and result.answer != "Set DATABASE_URL."


def test_guard_rule():
    allows = librarian.semantic_guard_allows
    assert allows("Why doesn't the worker start?", "why does the worker not start")
    assert allows("Why can't I log in?", "why cannot i log in")
    assert not allows("Why does the worker not start?", "Why does the worker start?")
    assert not allows("Is there no limit?", "Is there a limit?")
    assert not allows("Install Python 3.11", "Install Python 3.12")
    assert not allows("run two workers", "run three workers")
    assert allows("run two workers", "run 2 workers")
    assert allows("limit of 1,000 rows", "limit of 1000 rows")
    assert allows("which one is faster", "which is faster")


def test_semantic_search_can_be_switched_off(remembered, settings):
    settings.LIBRARIAN_SEMANTIC_SEARCH = False
    assert librarian.librarian_ask(query=DB_PARAPHRASE).match == "miss"
    assert librarian.librarian_ask(query=DB_QUESTION).match == "exact"


def test_cold_entries_are_not_semantic_candidates(remembered):
    QueryMemory.objects.filter(pk=remembered.pk).update(tier="cold")
    assert librarian.librarian_ask(query=DB_PARAPHRASE).match == "miss"


def test_expired_answers_are_misses(remembered, knowledge):
    assert remembered.expires_at > timezone.now() + dt.timedelta(hours=23)
    QueryMemory.objects.filter(pk=remembered.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert librarian.librarian_ask(query=DB_PARAPHRASE).match == "miss"
    result = librarian.librarian_ask(query=DB_QUESTION)
    assert result.match == "miss" and "DATABASE_URL to postgresql://" in result.answer
    # The remembered answer had confidence 1.0 (> 0.9), so the fresh one is cached in its place.
    remembered.refresh_from_db()
    assert (remembered.answer, remembered.answer_version, remembered.confidence) == (result.answer, 2, 0.5)
    assert remembered.expires_at > timezone.now()


def test_an_expired_answer_that_is_not_cached_again_is_dropped(remembered, knowledge):
    QueryMemory.objects.filter(pk=remembered.pk).update(
        expires_at=timezone.now() - dt.timedelta(seconds=1), confidence=0.5)
    assert librarian.librarian_ask(query=DB_QUESTION).match == "miss"
    remembered.refresh_from_db()
    assert remembered.answer is None and remembered.ask_count == 1


def test_pinned_answers_do_not_expire(db):
    entry, _ = librarian.librarian_remember(query="q", answer="a", pin=True)
    assert entry.pinned and entry.expires_at is None


def test_remember_is_idempotent_and_versions_changed_answers(db):
    first, created = librarian.librarian_remember(query="What is Winni?", answer="A memory server.")
    again, created_again = librarian.librarian_remember(query="what is winni?", answer="A memory server.")
    assert created and not created_again and again.answer_version == 1
    changed, _ = librarian.librarian_remember(query="What is Winni?", answer="A memory server for agents.")
    assert changed.answer_version == 2 and changed.confidence == 1.0
    assert QueryMemory.objects.count() == 1


def _cached(query, *, tier, minutes_ago, pinned=False):
    entry, _ = librarian.librarian_remember(query=query, answer=f"answer to {query}", pin=pinned)
    QueryMemory.objects.filter(pk=entry.pk).update(
        tier=tier, last_asked=timezone.now() - dt.timedelta(minutes=minutes_ago))
    return entry.pk


def test_eviction_on_insert_takes_the_lowest_tier_first_lru_within_it_and_never_pinned(db, settings):
    settings.LIBRARIAN_MAX_CACHED = 4
    pinned = _cached("pinned warm, oldest", tier="warm", minutes_ago=500, pinned=True)
    old_warm = _cached("old warm", tier="warm", minutes_ago=100)
    new_warm = _cached("new warm", tier="warm", minutes_ago=1)
    hot = _cached("very old hot", tier="hot", minutes_ago=1000)
    _cached("fifth", tier="core", minutes_ago=0)
    assert set(QueryMemory.objects.filter(answer__isnull=True).values_list("pk", flat=True)) == {old_warm}
    _cached("sixth", tier="core", minutes_ago=0)
    assert set(QueryMemory.objects.filter(answer__isnull=True).values_list("pk", flat=True)) == {old_warm, new_warm}
    settings.LIBRARIAN_MAX_CACHED = 1
    assert librarian.librarian_evict()["evicted"] == 3
    # Only the pinned answer is left: kept even though it is the oldest, lowest-tier one.
    assert set(QueryMemory.objects.filter(answer__isnull=False).values_list("pk", flat=True)) == {pinned}
    assert hot != pinned
    assert QueryMemory.objects.count() == 6  # statistics stay


def test_periodic_cleanup_expires_and_prunes(db, settings):
    stale = _cached("stale", tier="warm", minutes_ago=0)
    QueryMemory.objects.filter(pk=stale).update(expires_at=timezone.now() - dt.timedelta(minutes=1))
    librarian.librarian_ask(query="asked long ago")
    QueryMemory.objects.filter(query_text="asked long ago").update(last_asked=timezone.now() - dt.timedelta(days=31))
    librarian.librarian_ask(query="asked today")
    assert librarian.librarian_evict() == {"expired": 1, "evicted": 0, "pruned": 1}
    assert sorted(QueryMemory.objects.values_list("query_text", flat=True)) == ["asked today", "stale"]


def test_feedback_adjusts_confidence_and_repeated_negative_drops_the_answer(knowledge):
    query = "How do I set the DATABASE_URL?"
    for _ in range(3):
        librarian.librarian_ask(query=query)
    entry, dropped = librarian.librarian_feedback(query=query, helpful=True)
    assert (entry.confidence, entry.feedback_positive, dropped) == (0.6, 1, False)
    entry, dropped = librarian.librarian_feedback(query=query, helpful=False)
    assert not dropped and entry.answer is not None and entry.confidence == 0.4  # one down is not enough
    entry, dropped = librarian.librarian_feedback(query=query, helpful=False)
    assert dropped and entry.answer is None and entry.confidence == 0.2  # two down outnumber one up
    # Rejected: asked again it is answered afresh but not cached again.
    again = librarian.librarian_ask(query=query)
    assert again.match == "miss" and QueryMemory.objects.get().answer is None


def test_high_confidence_from_feedback_caches_on_the_next_ask(knowledge):
    query = "How do I set the DATABASE_URL?"
    librarian.librarian_ask(query=query)
    for _ in range(5):
        librarian.librarian_feedback(query=query, helpful=True)
    assert QueryMemory.objects.get().confidence == 1.0
    librarian.librarian_ask(query=query)
    assert QueryMemory.objects.get().answer is not None
    assert librarian.librarian_ask(query=query).match == "exact"


def test_unknown_queries_are_not_found_for_feedback_and_forget(db):
    with pytest.raises(NotFound) as feedback_error:
        librarian.librarian_feedback(query="never asked", helpful=True)
    assert feedback_error.value.field == "query" and "never asked" in feedback_error.value.message
    with pytest.raises(NotFound):
        librarian.librarian_forget(query="never asked")


def test_forget_removes_the_entry(remembered):
    assert librarian.librarian_forget(query=DB_QUESTION.upper()).query_text == DB_QUESTION
    assert not QueryMemory.objects.exists()


def test_bad_input_names_the_field_and_writes_nothing(db, settings):
    for call in (
        lambda: librarian.librarian_ask(query="   "),
        lambda: librarian.librarian_remember(query="", answer="a"),
        lambda: librarian.librarian_remember(query="q", answer=" \n"),
    ):
        with pytest.raises(InvalidInput) as error:
            call()
        assert error.value.field in ("query", "answer") and "must not be empty" in error.value.message
    with pytest.raises(PayloadTooLarge) as too_large:
        librarian.librarian_remember(query="q", answer="x" * (1024 * 1024 + 1))
    assert too_large.value.field == "answer" and "WINNI_MAX_CONTENT_BYTES" in too_large.value.message
    with pytest.raises(PayloadTooLarge):
        librarian.librarian_ask(query="x" * (1024 * 1024 + 1))
    with pytest.raises(InvalidInput) as nul:
        librarian.librarian_ask(query="a\x00b")
    assert nul.value.field == "query" and "NUL" in nul.value.message
    with pytest.raises(InvalidInput) as days:
        librarian.librarian_hit_rate_series(days=0)
    assert days.value.field == "days"
    assert not QueryMemory.objects.exists() and not LibrarianHourlyStats.objects.exists()


def test_disabled_cache_answers_but_records_nothing(knowledge, settings):
    settings.LIBRARIAN_MEMORY_ENABLED = False
    result = librarian.librarian_ask(query="How do I set the DATABASE_URL?")
    assert result.match == "miss" and "DATABASE_URL" in result.answer and result.entry is None
    assert not QueryMemory.objects.exists() and not LibrarianHourlyStats.objects.exists()


def test_without_auto_promotion_tiers_stay(knowledge, settings):
    settings.LIBRARIAN_AUTO_TIER_PROMOTION = False
    for _ in range(5):
        librarian.librarian_ask(query="How do I set the DATABASE_URL?")
    assert QueryMemory.objects.get().tier == "cold"


def test_stats_and_hit_rate_series(knowledge, remembered):
    query = "How do I set the DATABASE_URL?"
    for _ in range(4):
        librarian.librarian_ask(query=query)  # miss, miss, miss (cached), exact
    librarian.librarian_ask(query=DB_PARAPHRASE)  # semantic
    librarian.librarian_ask(query=DB_QUESTION)  # exact
    stats = librarian.librarian_memory_stats()
    assert (stats["asks"], stats["exact_hits"], stats["semantic_hits"], stats["misses"]) == (6, 2, 1, 3)
    assert stats["hit_rate"] == stats["hit_rate_24h"] == 0.5
    assert stats["entries"] == 2 and stats["cached_answers"] == 2
    assert stats["tiers"] == {"cold": 0, "warm": 1, "hot": 1, "core": 0}
    assert 1000 < stats["bytes_per_cached_answer"] < 10_000
    computed = QueryMemory.objects.get(query_text=query)
    assert stats["time_saved_ms"] == computed.compute_time_ms * 1
    series = librarian.librarian_hit_rate_series(days=3)
    assert [point["date"] for point in series][-1] == timezone.now().date().isoformat()
    assert series[-1] == {"date": series[-1]["date"], "asks": 6, "exact_hits": 2, "semantic_hits": 1,
                          "misses": 3, "hit_rate": 0.5}
    assert series[0]["asks"] == 0 and series[0]["hit_rate"] is None


def test_seed_command_is_idempotent(tmp_path, capsys):
    path = tmp_path / "faq.jsonl"
    rows = [{"question": "What is Winni?", "answer": "A memory server."},
            {"query": "Which port?", "answer": "9020"}, {"question": "what is  winni?", "answer": "A memory server."}]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n")
    call_command("librarian_seed", str(path), "--dry-run")
    assert not QueryMemory.objects.exists()
    call_command("librarian_seed", str(path))
    assert "2 created, 0 updated, 0 unchanged" in capsys.readouterr().out
    call_command("librarian_seed", str(path), "--pin")
    assert "0 created, 2 updated" in capsys.readouterr().out
    call_command("librarian_seed", str(path), "--pin")
    assert "0 created, 0 updated, 2 unchanged" in capsys.readouterr().out
    entries = list(QueryMemory.objects.order_by("query_text"))
    assert [(e.query_text, e.tier, e.pinned, e.embedding_model) for e in entries] == [
        ("What is Winni?", "warm", True, VECTOR_TAG), ("Which port?", "warm", True, VECTOR_TAG)]
    # Seeded answers are found by paraphrases at once.
    assert librarian.librarian_ask(query="What's Winni?").match == "semantic"


def test_seed_command_names_the_bad_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"question": "q", "answer": "a"}\n{"question": "q2"}\n')
    with pytest.raises(CommandError, match="bad.jsonl:2"):
        call_command("librarian_seed", str(path))
    assert not QueryMemory.objects.exists()


def test_the_cached_answer_to_a_question_is_the_projects_then_a_global_one(db):
    """What automatic recall adds as "Cached answer" (librarian_cached_answer): unexpired, the
    project's entry before a global one, no global one with project_only."""
    from core import projects

    shop = projects.project_create(name="shop")
    global_entry, _ = librarian.librarian_remember(query="Where do the backups go?", answer="To the data dir.")
    assert librarian.librarian_cached_answer(question="where do the backups  go", project=shop) == global_entry
    assert librarian.librarian_cached_answer(question="Where do the backups go?", project=shop,
                                             project_only=True) is None
    own, _ = librarian.librarian_remember(query="Where do the backups go?", answer="To S3.", project="shop")
    assert librarian.librarian_cached_answer(question="Where do the backups go?", project=shop) == own
    QueryMemory.objects.filter(pk=own.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    assert librarian.librarian_cached_answer(question="Where do the backups go?", project=shop) == global_entry
    assert librarian.librarian_cached_answer(question="Where do the logs go?", project=None) is None
