"""bench/realistic.py: the realistic corpus is deterministic, stores what Winni's capture path
stores (shapes, metadata, the 20,000-character cap), and its mix stays within tolerance of the
distribution its docstring documents, so the two cannot drift apart."""
import json
import re

import pytest
from django.conf import settings
from django.db import connection
from django.db.models import F

from agents import capture
from bench import realistic
from bench.realistic import RealisticCorpus, describe

MESSAGES, CONVERSATIONS = 6_000, 600  # the docstring's ratio (10 per session), another seed


@pytest.fixture(scope="module")
def sample() -> list:
    return list(RealisticCorpus(conversations=CONVERSATIONS, messages=MESSAGES, seed=1))


def documented() -> tuple[dict[str, float], dict[str, dict[str, float]], dict[str, float]]:
    """(role -> share, row -> {share, p50, ...}, tool -> share of calls) from the docstring's tables."""
    roles, rows, calls = {}, {}, {}
    for line in realistic.__doc__.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or cells[0] in ("role", "tool message") or len(cells) < 7:
            continue
        number = lambda text: float(text.rstrip("%").replace(",", "")) if text else None  # noqa: E731
        if len(cells) == 7 and cells[0] in ("user", "assistant", "tool", "system"):
            roles[cells[0]] = number(cells[1]) / 100
            rows[cells[0]] = {"p50": number(cells[3]), "p90": number(cells[4])}
        elif len(cells) == 8:
            rows[cells[0]] = {"messages": number(cells[2]) / 100, "p50": number(cells[4]), "p90": number(cells[5])}
            if cells[1]:
                calls[cells[0].rsplit(" ", 1)[0]] = number(cells[1]) / 100
    return roles, rows, calls


def test_the_docstring_documents_the_distribution():
    roles, rows, calls = documented()
    assert set(roles) == {"user", "assistant", "tool", "system"} and roles["system"] == 0
    assert abs(sum(roles.values()) - 1) < 0.002
    assert set(calls) == set(realistic.TOOL_MIX) and abs(sum(calls.values()) - 1) < 0.01
    assert {"Read result", "Read hook", "Bash call", "Edit hook"} <= set(rows)


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another(sample):
    again = list(RealisticCorpus(conversations=CONVERSATIONS, messages=MESSAGES, seed=1))
    fingerprint = lambda rows: [(c.id, c.session_id, json.dumps(c.metadata), c.created_at,  # noqa: E731
                                 [(m.id, m.role, m.content, json.dumps(m.metadata), m.created_at) for m in c.messages])
                                for c in rows]
    assert fingerprint(again) == fingerprint(sample)
    other = list(RealisticCorpus(conversations=CONVERSATIONS, messages=MESSAGES, seed=2))
    assert [m.content for m in other[0].messages] != [m.content for m in sample[0].messages]


def test_sizes_and_order_are_what_was_asked(sample):
    assert len(sample) == CONVERSATIONS
    assert sum(len(c.messages) for c in sample) == MESSAGES
    for conversation in sample:
        turns = [m.turn_number for m in conversation.messages]
        assert turns == list(range(1, len(turns) + 1))
        times = [m.created_at for m in conversation.messages]
        assert times == sorted(times) and conversation.created_at == times[0] and conversation.updated_at == times[-1]
        # A session starts with a prompt and ends with the agent's reply.
        assert conversation.messages[0].role == "user" and conversation.messages[-1].role == "assistant"
    projects = {c.metadata["project"] for c in sample}
    assert len(projects) > 10 and all(c.metadata["cwd"].split("/")[4] == c.metadata["project"] for c in sample)


def test_capped_like_the_capture_path(sample):
    assert realistic.TRUNCATED == capture.TRUNCATED
    assert realistic.CAPTURE_LIMIT == settings.WINNI_CAPTURE_TOOL_MAX_CHARS
    longest_note = len(realistic.TRUNCATED.format(dropped=10**9))
    capped = 0
    for message in (m for c in sample for m in c.messages):
        assert message.content.strip()
        if message.role == "tool":
            assert len(message.content) <= realistic.CAPTURE_LIMIT + longest_note
            if len(message.content) > realistic.CAPTURE_LIMIT:
                capped += 1
                assert re.search(r"\n… \[truncated by Winni: \d+ more characters\]$", message.content)
            else:
                json.loads(message.content)  # an uncut tool message is the JSON capture wrote
        else:
            assert len(message.content) <= realistic.CAPTURE_LIMIT
    assert capped > 0


def test_messages_carry_the_capture_metadata(sample):
    for conversation in sample:
        metadata = conversation.metadata
        assert metadata["source"] in (capture.CLAUDE_CODE, capture.CLAUDE_TRANSCRIPT)
        assert metadata["transcript_path"].endswith(f"{conversation.session_id}.jsonl")
        pending = []
        for message in conversation.messages:
            meta = message.metadata
            if metadata["source"] == capture.CLAUDE_CODE:
                assert meta["capture_key"].startswith("hook:")
                expected = {"user": "UserPromptSubmit", "assistant": "Stop", "tool": "PostToolUse"}[message.role]
                assert meta["hook_event"] == expected
                if message.role == "tool":
                    body = json.loads(message.content) if len(message.content) <= 20_000 else None
                    assert body is None or body["tool_name"] == meta["tool_name"]
            else:
                assert meta["capture_key"] == f"transcript:{meta['transcript_uuid']}:0"
                if meta["block_type"] == "tool_use":
                    pending.append(json.loads(message.content)["id"])
                elif meta["block_type"] == "tool_result":
                    tool_id = pending.pop(0)  # every result follows its call
                    assert message.content.endswith("]") or f'"tool_use_id": "{tool_id}"' in message.content


def test_the_statistics_read_the_stored_form_as_the_generator_meant_it(sample):
    stats = describe(sample)
    for conversation in sample:
        pending = realistic.deque()
        for message in conversation.messages:
            kind, tool = realistic.classify(message.role, message.content, message.metadata, pending)
            assert tool == message.tool
            if message.role == "tool":
                assert kind.rsplit(" ", 1)[1] == {"tool_use": "call", "tool_result": "result", "hook": "hook"}[message.block]
    assert stats.messages == MESSAGES


def test_the_mix_and_lengths_stay_near_the_documented_ones(sample):
    roles, rows, calls = documented()
    stats = describe(sample)
    for role, share in roles.items():
        assert abs(stats.share(role) - share) < 0.035, role
    for tool, share in calls.items():
        assert abs(stats.call_share(tool) - share) < 0.03, tool
    checked = 0
    for key, row in rows.items():
        found = stats.lengths.get(key, [])
        if len(found) < 150:
            continue
        checked += 1
        measured = stats.percentiles(key)
        assert row["p50"] * 0.7 <= measured["p50"] <= row["p50"] * 1.3, (key, measured, row)
        assert row["p90"] * 0.6 <= measured["p90"] <= row["p90"] * 1.4, (key, measured, row)
        if "messages" in row:
            assert abs(len(found) / stats.messages - row["messages"]) < 0.025, key
    assert checked >= 8


@pytest.mark.django_db
def test_it_loads_through_the_bench_copy_path_and_reads_back_the_same():
    from bench.corpus import copy_corpus
    from conversations.models import Message

    corpus = RealisticCorpus(conversations=30, messages=300, seed=4)
    stats = copy_corpus(corpus, messages=300, defer_indexes=False, progress=False)
    assert (stats.conversations, stats.messages) == (30, 300) and Message.objects.count() == 300
    stored = realistic.describe_database()
    generated = describe(corpus)
    assert stored.roles == generated.roles and stored.calls == generated.calls
    assert {k: sorted(v) for k, v in stored.lengths.items()} == {k: sorted(v) for k, v in generated.lengths.items()}
    # Path parts are searchable: a file name of the corpus finds the messages that name it.
    paths = [p for c in corpus for m in c.messages for p in re.findall(r'"file_path": "([^"]+)"', m.content)]
    name = paths[0].rsplit("/", 1)[1]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM conversations_message WHERE search_vector @@ "
                       "websearch_to_tsquery('english', %s)", [name])
        assert cursor.fetchone()[0] >= 1


@pytest.mark.django_db
def test_with_projects_each_session_and_its_messages_are_written_in_its_project():
    from conversations.models import Conversation, Message
    from core import projects

    realistic.load_realistic(conversations=20, messages=200, seed=4, progress=False, defer_indexes=False,
                             with_projects=True)
    sessions = list(Conversation.objects.select_related("project"))
    assert len(sessions) == 20
    for session in sessions:
        # The project named in the session's metadata, found by that name as a hook's `project` is.
        assert session.project is not None and session.project.name == session.metadata["project"]
        assert projects.project_find(session.metadata["project"]) == session.project
    assert not Message.objects.filter(project__isnull=True).exists()
    assert not Message.objects.exclude(project_id=F("conversation__project_id")).exists()
