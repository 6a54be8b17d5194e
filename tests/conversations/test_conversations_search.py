import datetime as dt

import pytest
from django.db import transaction

from conversations import services
from conversations.models import Message
from core.errors import InvalidInput

pytestmark = pytest.mark.django_db


def _store(content, *, conversation=None, role="user", at=None, session_id=None):
    if conversation is None:
        conversation = services.conversation_begin(session_id=session_id, metadata={"project": "winni"})
    message = services.message_store(conversation_id=conversation.id, role=role, content=content, created_at=at)
    return conversation, message


def _contents(page):
    return [hit.message.content for hit in page.hits]


def test_ranked_case_insensitive_with_stemming_and_snippet():
    _store("We talked about the weather and lunch.")
    _store("Postgres INDEXES: the GIN index makes full-text search on the index column fast; index it.")
    _store("An index was mentioned once.")
    page = services.message_search(query="Index")
    assert _contents(page) == [
        "Postgres INDEXES: the GIN index makes full-text search on the index column fast; index it.",
        "An index was mentioned once.",
    ]
    assert page.total == 2 and page.total_is_estimate is False
    assert page.hits[0].rank > page.hits[1].rank
    assert "**index**" in page.hits[1].snippet.lower()


def test_the_snippet_of_a_long_message_shows_where_it_matches():
    """A snippet is cut from a window around the first match, not from the whole (up to 20 KB)
    message; a match the window misses (a stem that is not a substring: staging → stage) falls
    back to the whole message."""
    filler = " ".join(f"line {n} of the build log reads ok" for n in range(800))  # ≈ 28,000 characters
    assert len(filler) > 10 * services.search.SNIPPET_WINDOW
    _store(filler + " then the migration of the tenants table failed with a deadlock. " + filler)
    _store(filler + " we were staging the release candidate. " + filler)
    _store("the tenants migration is short")
    page = services.message_search(query="tenants deadlock", mode="fts")
    assert len(page.hits) == 1
    snippet = page.hits[0].snippet
    assert "**deadlock**" in snippet and "**tenants**" in snippet and len(snippet) < 1000
    staged = services.message_search(query="stage", mode="fts").hits
    assert len(staged) == 1 and "**staging**" in staged[0].snippet
    short = services.message_search(query="tenants migration", mode="fts").hits
    whole = [hit.snippet for hit in short if hit.message.content.startswith("the tenants")]
    assert len(whole) == 1 and "**tenants** **migration** is short" in whole[0]


def test_snippet_windows_take_queries_with_regex_characters_literally():
    filler = "nothing to see here. " * 200
    _store(filler + "edit src/app/config.yaml (v2) [beta] with a+b*c? and $HOME^2 | tee" + filler)
    for query in ["config.yaml (v2) [beta]", "a+b*c? $HOME^2 | tee", "src/app/config.yaml"]:
        hits = services.message_search(query=query, mode="hybrid").hits
        # Cut around the match (PostgreSQL keeps the path as one word, so it may not be bold).
        assert len(hits) == 1 and "config.yaml" in hits[0].snippet and len(hits[0].snippet) < 1000, query


def test_ties_go_to_the_newer_message():
    old_at = "2024-01-01T10:00:00Z"
    new_at = "2024-06-01T10:00:00Z"
    _store("deploy the release", at=old_at)
    _store("deploy the release", at=new_at)
    hits = services.message_search(query="deploy").hits
    assert [h.message.created_at.year for h in hits] == [2024, 2024]
    assert hits[0].message.created_at.month == 6


def test_websearch_syntax_phrase_and_exclusion():
    _store("the stack trace shows a null pointer")
    _store("a trace of the stack of plates")
    assert _contents(services.message_search(query='"stack trace"')) == ["the stack trace shows a null pointer"]
    assert _contents(services.message_search(query="stack -pointer")) == ["a trace of the stack of plates"]


def test_filters_session_conversation_role_and_dates():
    conv_a, _ = _store("alpha kiwi", session_id="sa", at="2024-03-01T08:00:00Z")
    _store("assistant kiwi", conversation=conv_a, role="assistant", at="2024-03-02T23:59:59Z")
    _store("beta kiwi", session_id="sb", at="2024-03-05T12:00:00Z")
    assert _contents(services.message_search(query="kiwi", session_id="sb")) == ["beta kiwi"]
    assert set(_contents(services.message_search(query="kiwi", conversation_id=str(conv_a.id)))) == {
        "alpha kiwi", "assistant kiwi",
    }
    assert _contents(services.message_search(query="kiwi", role="assistant")) == ["assistant kiwi"]
    # A date-only end covers the whole day; a date-only start begins at midnight.
    assert set(_contents(services.message_search(query="kiwi", start_date="2024-03-02", end_date="2024-03-02"))) == {
        "assistant kiwi"
    }
    assert _contents(services.message_search(query="kiwi", start_date="2024-03-03T00:00:00Z")) == ["beta kiwi"]
    assert _contents(services.message_search(query="kiwi", end_date="2024-03-01T08:00:00Z")) == ["alpha kiwi"]


def test_hit_carries_conversation_fields_and_context_lines():
    conversation = services.conversation_begin(session_id="ctx", metadata={"cwd": "/repo"})
    for i in range(1, 8):
        text = "the needle is here" if i == 4 else f"filler line {i}"
        services.message_store(conversation_id=conversation.id, role="user", content=text)
    hit = services.message_search(query="needle", context_lines=2).hits[0]
    assert hit.message.turn_number == 4
    assert hit.message.conversation.session_id == "ctx"
    assert hit.message.conversation.metadata == {"cwd": "/repo"}
    assert [m.turn_number for m in hit.context] == [2, 3, 5, 6]
    assert services.message_search(query="needle", context_lines=0).hits[0].context == []
    edge = services.message_search(query="filler line 7", context_lines=3).hits[0]
    assert [m.turn_number for m in edge.context] == [4, 5, 6]


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_snippets_are_made_beside_the_context(monkeypatch):
    """Committed rows: a page's snippets are made by a helper thread (its own connection) while the
    caller reads the conversations and the turns around the hits; inside a transaction all of it
    runs on the caller's thread. The page is the same either way."""
    import threading

    from conversations.services import search
    from core import connections

    threads: list[str] = []

    def recording(work):
        def traced():
            threads.append(threading.current_thread().name)
            return work()

        return connections.beside(traced)

    monkeypatch.setattr(search, "beside", recording)
    conversation = services.conversation_begin(session_id="ctx", metadata={"cwd": "/repo"})
    for i in range(1, 8):
        text = "the needle is here, a needle in a haystack" if i in (2, 6) else f"filler line {i}"
        services.message_store(conversation_id=conversation.id, role="user", content=text)

    def page() -> list[tuple]:
        found = services.message_search(query="needle", mode="fts", context_lines=2)
        return [(hit.message.turn_number, hit.snippet, hit.message.conversation.session_id,
                 [m.turn_number for m in hit.context]) for hit in found.hits]

    beside = page()
    with transaction.atomic():
        inline = page()
    assert threads[0].startswith("winni-recall") and threads[1] == threading.current_thread().name
    assert beside == inline
    assert sorted((turn, session, around) for turn, _, session, around in beside) == \
        [(2, "ctx", [1, 3, 4]), (6, "ctx", [4, 5, 7])]
    assert all("**needle**" in snippet for _, snippet, _, _ in beside)


def test_the_turns_around_the_last_turn_number_there_is():
    """A hit at turn 2^31 - 1 (the column's last) gets its context: the window around it is
    computed past the integer range."""
    from conversations.services.messages import TURN_MAX

    conversation = services.conversation_begin(session_id="edge")
    services.message_store(conversation_id=conversation.id, role="user", content="filler", turn_number=TURN_MAX - 1)
    services.message_store(conversation_id=conversation.id, role="user", content="the needle", turn_number=TURN_MAX)
    for mode in ("fts", "hybrid"):
        hit = services.message_search(query="needle", mode=mode, context_lines=2).hits[0]
        assert hit.message.turn_number == TURN_MAX and [m.turn_number for m in hit.context] == [TURN_MAX - 1]


def test_paging_and_total():
    conversation = services.conversation_begin()
    for i in range(5):
        services.message_store(conversation_id=conversation.id, role="user", content=f"apple number {i}")
    first = services.message_search(query="apple", limit=2)
    rest = services.message_search(query="apple", limit=2, offset=2)
    past = services.message_search(query="apple", limit=2, offset=10)
    assert first.total == rest.total == past.total == 5
    assert len(first.hits) == 2 and len(rest.hits) == 2 and past.hits == []
    ids = [h.message.id for h in first.hits + rest.hits]
    assert len(set(ids)) == 4


def test_common_terms_rank_only_the_most_recent_window(settings):
    settings.WINNI_SEARCH_CANDIDATES = 5
    conversation = services.conversation_begin()
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    # The oldest message is the best match, but it is outside the 5 most recent matches.
    services.message_store(
        conversation_id=conversation.id, role="user", content="common common common common", created_at=base
    )
    for i in range(1, 9):
        services.message_store(
            conversation_id=conversation.id, role="user", content=f"common filler {i}",
            created_at=base + dt.timedelta(days=i),
        )
    page = services.message_search(query="common", limit=3)
    assert page.total_is_estimate is True
    assert page.total >= 5
    assert len(page.hits) == 3
    assert "common common common common" not in _contents(page)
    # Past the ranked window the matches continue newest first, so every match stays reachable
    # and pages do not overlap.
    ranked = services.message_search(query="common", limit=5)
    deep = services.message_search(query="common", limit=5, offset=5)
    assert _contents(deep) == ["common filler 3", "common filler 2", "common filler 1", "common common common common"]
    assert not {h.message.id for h in ranked.hits} & {h.message.id for h in deep.hits}
    assert deep.total == 9 and deep.total_is_estimate is False
    # Within the window the total is exact.
    narrow = services.message_search(query="common", start_date="2024-01-07")
    assert (narrow.total, narrow.total_is_estimate) == (3, False)


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_query_is_an_error(query):
    with pytest.raises(InvalidInput) as err:
        services.message_search(query=query)
    assert err.value.field == "query"


@pytest.mark.parametrize("query", ["the and of", "!!!"])
def test_a_query_of_stop_words_only_finds_nothing(query):
    """Full-text search has nothing to look for: an empty answer, not an error (issue #24: no
    schema can tell a client which words are stop words)."""
    _store("the and of these words")
    page = services.message_search(query=query, mode="fts")
    assert page.hits == [] and page.total == 0


def test_a_start_after_the_end_is_an_empty_range():
    _store("ranged message")
    assert services.message_search(query="ranged", start_date="2099-02-02", end_date="2099-02-01").hits == []
    page = services.message_search(query="ranged", start_date="2024-02-02", end_date="2001-02-01")
    assert page.hits == [] and page.total == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"offset": -1}, "offset"),
        ({"context_lines": -1}, "context_lines"),
        ({"role": "robot"}, "role"),
        ({"start_date": "last week"}, "start_date"),
        ({"end_date": "2024-13-45"}, "end_date"),
        ({"conversation_id": "nope"}, "conversation_id"),
        ({"max_chars": 1_999}, "max_chars"),
        ({"max_chars": "big"}, "max_chars"),
    ],
)
def test_bad_search_arguments_name_the_field(kwargs, field):
    with pytest.raises(InvalidInput) as err:
        services.message_search(query="anything", **kwargs)
    assert err.value.field == field


def test_fts_ranked_is_reusable_with_filters():
    _, message = _store("reusable ranking core", role="assistant")
    _store("reusable ranking core", role="user")
    filters = services.message_search_filters(role="assistant")
    page = services.message_fts_ranked(query="ranking", filters=filters, limit=10)
    assert [hit.message_id for hit in page.hits] == [message.id]
    assert list(filters.apply(Message.objects.all())) == [message]


@pytest.mark.parametrize("query", ["retrieval.py", "retrieval", "memory/retrieval.py", "base.py", "settings",
                                   "github", "bar.git"])
@pytest.mark.parametrize("mode", ["fts", "hybrid"])
def test_file_paths_are_found_by_their_parts(query, mode):
    """PostgreSQL's parser keeps a path as one token; its file name and parts must match too."""
    _store("I changed memory/retrieval.py and winni_site/settings/base.py, see github.com/foo/bar.git")
    _store("We talked about the weather and lunch.")
    page = services.message_search(query=query, mode=mode)
    assert _contents(page)[:1] == [
        "I changed memory/retrieval.py and winni_site/settings/base.py, see github.com/foo/bar.git"]


def test_prose_is_indexed_as_before_and_paths_add_only_their_parts():
    from django.db import connection

    def stored_and_plain(text):
        _, message = _store(text)
        with connection.cursor() as cursor:
            cursor.execute("SELECT search_vector::text, to_tsvector('english', content)::text "
                           "FROM conversations_message WHERE id = %s", [message.id])
            return cursor.fetchone()

    stored, plain = stored_and_plain("We shipped version 3.14 of the release; the index fix is in.")
    assert stored == plain  # no path, no dotted name: BM25 sees exactly what it saw before
    stored, plain = stored_and_plain("edit ./winni and docs/setup.md")
    assert "'setup.md'" not in plain and "'doc'" not in plain
    assert "'setup.md'" in stored and "'setup'" in stored and "'doc'" in stored and "'md'" in stored
    assert stored.count("'winni'") == 1  # a part is added once, not once more as a file name


def test_hybrid_finds_a_file_name_from_its_full_path():
    """BM25 ORs the query's lexemes, path parts included: a row naming only the file is found."""
    _store("the bug was in retrieval.py after all")
    _store("We talked about the weather and lunch.")
    page = services.message_search(query="memory/retrieval.py", mode="hybrid")
    assert _contents(page)[:1] == ["the bug was in retrieval.py after all"]


def _toasted_values():
    """The distinct values the message table keeps out of line, in its TOAST relation."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'conversations_message'::regclass")
        toast = cursor.fetchone()[0]
        cursor.execute(f"SELECT count(DISTINCT chunk_id) FROM {toast}")
        return cursor.fetchone()[0]


def test_a_long_message_keeps_its_search_vector_in_its_row():
    """BM25 reads each candidate's vector: out of line it costs a TOAST index lookup per row
    (migration 0008). A 3 KB tool output of words that do not compress: its content goes out of
    line, its search vector stays in the row."""
    import secrets

    before = _toasted_values()
    _, message = _store(" ".join(secrets.token_hex(5) for _ in range(300)), role="tool")
    assert _toasted_values() == before + 1
    assert services.message_search(query=message.content.split()[7]).hits[0].message.id == message.id


def test_a_page_of_long_messages_is_cut_to_max_chars():
    """The page's JSON holds at most max_chars characters: the hits' and their turns' content is
    cut to fit (a hit's more than a turn's), short ones stay whole, and each says what it left out."""
    import json

    from conversations.outputs import search_page_dict

    conversation, _ = _store("Where does the retry loop of the uploader live?")
    for turn in range(6):
        # Long tool outputs with quotes and newlines (longer in JSON than in characters).
        body = "".join(f'line {turn}.{n}: "retry" uploader backoff state\n' for n in range(150))
        _store(body, conversation=conversation, role="tool")
    short = "The retry loop is in uploader.py."
    _store(short, conversation=conversation, role="assistant")

    whole = search_page_dict(services.message_search(query="retry uploader", context_lines=1, max_chars=2_000_000))
    assert all(not hit["truncated"] for hit in whole["results"])
    page = search_page_dict(services.message_search(query="retry uploader", context_lines=1, max_chars=15_000))
    assert len(json.dumps(page, ensure_ascii=False, separators=(",", ":"))) <= 15_000
    assert len(page["results"]) == len(whole["results"]) == 8
    by_id = {hit["message_id"]: hit for hit in whole["results"]}
    cut = [hit for hit in page["results"] if hit["truncated"]]
    assert len(cut) == 6
    for hit in cut:
        assert by_id[hit["message_id"]]["content"].startswith(hit["content"]) and hit["content"]
        assert hit["content_length"] == len(by_id[hit["message_id"]]["content"]) > len(hit["content"])
    assert {hit["content"] for hit in page["results"] if not hit["truncated"]} >= {short}
    turns = [turn for hit in cut for turn in hit["context"] if turn["truncated"]]
    assert turns and max(len(turn["content"]) for turn in turns) < min(len(hit["content"]) for hit in cut)
    # Less room than the rest of the page takes: every text is cut away, the rest is kept.
    bare = search_page_dict(services.message_search(query="retry uploader", context_lines=1, max_chars=2_000))
    assert [hit["message_id"] for hit in bare["results"]] == [hit["message_id"] for hit in page["results"]]
    assert all(hit["content"] == "" and hit["truncated"] and hit["snippet"] == "…" for hit in bare["results"])


def test_fair_shares_keep_short_texts_whole_and_cut_long_ones_evenly():
    from conversations.outputs import fair_shares

    assert fair_shares([10, 100, 1000], [1, 1, 1], 300) == [10, 100, 190]
    assert fair_shares([10, 500, 1000], [1, 1, 1], 300) == [10, 145, 145]
    assert fair_shares([10, 100, 1000], [1, 1, 1], 5000) == [10, 100, 1000]
    assert fair_shares([1000, 1000], [4, 1], 500) == [400, 100]
    assert fair_shares([1000, 50], [4, 1], 500) == [450, 50]
