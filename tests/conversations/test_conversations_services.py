import datetime as dt
import uuid

import pytest

from conversations import services
from conversations.models import Conversation, Message
from core.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge

pytestmark = pytest.mark.django_db


def test_begin_stores_session_and_metadata():
    conversation = services.conversation_begin(session_id="s1", metadata={"cwd": "/repo"})
    assert Conversation.objects.get(pk=conversation.pk).metadata == {"cwd": "/repo"}


def test_it_rejects_non_object_metadata():
    with pytest.raises(InvalidInput) as err:
        services.conversation_begin(metadata=["a"])  # type: ignore[arg-type]
    assert err.value.field == "metadata"
    assert Conversation.objects.count() == 0


def test_turns_are_assigned_in_order_and_updated_at_moves():
    conversation = services.conversation_begin()
    before = conversation.updated_at
    first = services.message_store(conversation_id=conversation.id, role="user", content="hello")
    second = services.message_store(conversation_id=str(conversation.id), role="assistant", content="hi")
    assert (first.turn_number, second.turn_number) == (1, 2)
    conversation.refresh_from_db()
    assert conversation.updated_at > before


def test_given_turn_is_kept_and_next_follows_the_maximum():
    conversation = services.conversation_begin()
    services.message_store(conversation_id=conversation.id, role="user", content="a", turn_number=5)
    assert services.message_store(conversation_id=conversation.id, role="user", content="b").turn_number == 6


def test_existing_turn_is_a_conflict_not_an_overwrite():
    conversation = services.conversation_begin()
    services.message_store(conversation_id=conversation.id, role="user", content="a", turn_number=1)
    with pytest.raises(Conflict) as err:
        services.message_store(conversation_id=conversation.id, role="user", content="b", turn_number=1)
    assert err.value.field == "turn_number"
    assert list(Message.objects.values_list("content", flat=True)) == ["a"]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"role": "robot"}, "role"),
        ({"content": "   "}, "content"),
        ({"content": ""}, "content"),
        ({"metadata": "x"}, "metadata"),
        ({"turn_number": 0}, "turn_number"),
        ({"created_at": "yesterday"}, "created_at"),
    ],
)
def test_it_rejects_bad_messages_naming_the_field(kwargs, field):
    conversation = services.conversation_begin()
    args = {"conversation_id": conversation.id, "role": "user", "content": "ok", **kwargs}
    with pytest.raises(InvalidInput) as err:
        services.message_store(**args)
    assert err.value.field == field
    assert Message.objects.count() == 0


def test_content_over_the_limit_is_too_large(settings):
    settings.WINNI_MAX_CONTENT_BYTES = 10
    conversation = services.conversation_begin()
    with pytest.raises(PayloadTooLarge):
        services.message_store(conversation_id=conversation.id, role="user", content="x" * 11)


def test_unknown_and_malformed_conversation_ids():
    with pytest.raises(NotFound) as err:
        services.message_store(conversation_id=uuid.uuid4(), role="user", content="x")
    assert "not found" in err.value.message
    with pytest.raises(InvalidInput) as err2:
        services.conversation_get(conversation_id="not-a-uuid")
    assert err2.value.field == "conversation_id"


def test_a_conversation_is_named_by_the_start_of_its_id_unless_another_shares_it():
    """Automatic recall's block names a conversation as git abbreviates a commit: by the first 8
    hex digits of its id, or the whole id when another conversation's id starts the same; reading
    it back takes either, and a start two conversations share asks for the whole id."""
    one = Conversation.objects.create(id=uuid.UUID("e8f2bbed-4dcb-4000-8000-000000000001"))
    twins = [Conversation.objects.create(id=uuid.UUID(f"0c0ffee0-1234-4000-8000-00000000000{n}")) for n in (1, 2)]
    refs = services.conversation_refs(ids=[one.id, twins[0].id, None, "not-an-id"])
    assert refs == {str(one.id): "e8f2bbed", str(twins[0].id): str(twins[0].id), "not-an-id": "not-an-id"}
    assert services.conversation_get(conversation_id="e8f2bbed")[0].id == one.id
    assert services.conversation_get(conversation_id=" E8F2BBED")[0].id == one.id
    assert services.conversation_get(conversation_id=str(twins[1].id))[0].id == twins[1].id
    with pytest.raises(InvalidInput) as shared:
        services.conversation_get(conversation_id="0c0ffee0")
    assert shared.value.field == "conversation_id" and "whole id" in shared.value.message
    with pytest.raises(NotFound):
        services.conversation_get(conversation_id="aaaaaaaa")
    with pytest.raises(InvalidInput):
        services.conversation_get(conversation_id="e8f2bbe")  # shorter than the block's name: not a guess


def test_created_at_can_be_given_for_imports():
    conversation = services.conversation_begin()
    message = services.message_store(
        conversation_id=conversation.id, role="user", content="old", created_at="2023-05-08T13:56:00"
    )
    assert message.created_at == dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.timezone.utc)


def test_get_returns_messages_in_turn_order():
    conversation = services.conversation_begin()
    services.message_store(conversation_id=conversation.id, role="user", content="two", turn_number=2)
    services.message_store(conversation_id=conversation.id, role="user", content="one", turn_number=1)
    _, messages = services.conversation_get(conversation_id=conversation.id)
    assert [m.content for m in messages] == ["one", "two"]


def test_stored_messages_are_announced_after_commit(django_capture_on_commit_callbacks):
    from core.searchable import searchable_changed

    seen = []

    def receiver(sender, kind, ids, **kwargs):
        seen.append((kind, ids))

    searchable_changed.connect(receiver)
    try:
        conversation = services.conversation_begin()
        with django_capture_on_commit_callbacks(execute=True):
            message = services.message_store(conversation_id=conversation.id, role="user", content="x")
    finally:
        searchable_changed.disconnect(receiver)
    assert seen == [("message", [message.id])]


def test_get_reads_a_range_of_turns_and_names_a_bad_bound():
    conversation = services.conversation_begin()
    for turn in range(1, 6):
        services.message_store(conversation_id=conversation.id, role="user", content=f"turn {turn}")
    read = lambda **kwargs: [m.turn_number for m in services.conversation_get(  # noqa: E731
        conversation_id=conversation.id, **kwargs)[1]]
    assert read(turn_from=2, turn_to=3) == [2, 3]
    assert read(turn_from=4) == [4, 5] and read(turn_to=1) == [1] and read(turn_from=3, turn_to=3) == [3]
    assert read(turn_from=3, turn_to=2) == []  # an empty range, as a search's dates
    for kwargs, field in (({"turn_from": 0}, "turn_from"),
                          ({"turn_to": "2"}, "turn_to"), ({"max_chars": 1_999}, "max_chars")):
        with pytest.raises(InvalidInput) as err:
            services.conversation_get(conversation_id=conversation.id, **kwargs)
        assert err.value.field == field


def test_a_conversation_of_long_messages_is_cut_to_max_chars_and_one_turn_reads_whole():
    import json

    from conversations.outputs import conversation_dict

    conversation = services.conversation_begin()
    long_text = "".join(f'{n}: "tool" output\n' for n in range(400))
    for _ in range(8):
        services.message_store(conversation_id=conversation.id, role="tool", content=long_text)
    services.message_store(conversation_id=conversation.id, role="assistant", content="Short answer.")
    out = conversation_dict(*services.conversation_get(conversation_id=conversation.id), 6_000)
    assert len(json.dumps(out, ensure_ascii=False, separators=(",", ":"))) <= 6_000
    *cut, short = out["messages"]
    assert all(m["truncated"] and m["content_length"] == len(long_text) and long_text.startswith(m["content"])
               and m["content"] for m in cut)
    assert short["content"] == "Short answer." and not short["truncated"]
    (whole,) = conversation_dict(*services.conversation_get(conversation_id=conversation.id, turn_from=3,
                                                            turn_to=3))["messages"]
    assert whole["content"] == long_text and not whole["truncated"]


# --- what the agents' side reads through the services (issue #46) ---------------------------------


def test_a_message_metadata_key_is_set_beside_the_others_and_a_missing_message_is_said():
    conversation = services.conversation_begin(session_id="s1")
    message = services.message_store(conversation_id=conversation.id, role="user", content="hi",
                                     metadata={"capture_key": "hook:1"})
    assert services.message_metadata_value(message_id=message.pk, key="recall_undelivered") is None
    assert services.message_metadata_set(message_id=message.pk, key="recall_undelivered", value="slow")
    assert Message.objects.get(pk=message.pk).metadata == {"capture_key": "hook:1", "recall_undelivered": "slow"}
    assert services.message_metadata_value(message_id=message.pk, key="recall_undelivered") == "slow"
    assert services.message_metadata_set(message_id=uuid.uuid4(), key="k", value=1) is False
    assert services.message_id_with_metadata(conversation=conversation, key="capture_key", value="hook:1") == message.pk
    assert services.message_id_with_metadata(conversation=conversation, key="capture_key", value="hook:2") is None
    assert services.message_metadata_values(conversation=conversation, key="capture_key") == {"hook:1"}


def test_a_session_is_found_by_its_client_and_the_recall_scope_leaves_it_out():
    mine = services.conversation_begin(session_id="s1", metadata={"source": "claude-code"})
    other = services.conversation_begin(session_id="s2", metadata={"source": "claude-code"})
    assert services.conversation_for_session(session_id="s1", source="claude-code") == mine
    assert services.conversation_for_session(session_id="s1", source="codex") is None
    assert services.conversation_find(conversation_id=other.id) == other
    for conversation in (mine, other):
        services.message_store(conversation_id=conversation.id, role="user", content="q")
        services.message_store(conversation_id=conversation.id, role="tool", content="t")
    scope = services.message_recall_scope(project=None, excluding_session="s1")
    assert {(m.conversation_id, m.role) for m in scope.rows} == {(other.id, "user"), (other.id, "tool")}
    spoken = services.message_recall_scope(project=None, spoken_only=True)
    assert sorted(m.role for m in spoken.rows) == ["user", "user"]
    assert services.conversations_by_id(ids=[mine.id, uuid.uuid4()]) == {mine.id: mine}


def test_activity_counts_the_messages_of_the_given_clients_since_a_time():
    captured = services.conversation_begin(session_id="s1", metadata={"source": "claude-code"})
    services.conversation_begin(session_id="s2", metadata={"source": "rest"})
    services.message_store(conversation_id=captured.id, role="user", content="old", created_at="2026-01-01T00:00:00Z")
    services.message_store(conversation_id=captured.id, role="user", content="new", created_at="2026-03-02T00:00:00Z")
    activity = services.conversation_activity(sources=("claude-code",), since=dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc))
    assert list(activity) == [None] and activity[None]["events_today"] == 1
    assert activity[None]["last_event_at"] == Conversation.objects.get(pk=captured.pk).updated_at
