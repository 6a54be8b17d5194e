import uuid

import pytest

from conversations import services
from conversations.models import Conversation, Message
from core.errors import InvalidInput, NotFound, PayloadTooLarge
from core.searchable import searchable_changed

pytestmark = pytest.mark.django_db


def _messages(n, **extra):
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}", **extra} for i in range(n)]


def test_bulk_creates_the_conversation_and_numbers_turns_in_array_order():
    conversation, stored = services.messages_store_bulk(
        messages=_messages(3), session_id="s-bulk", metadata={"source": "import"}
    )
    assert conversation.session_id == "s-bulk" and conversation.metadata == {"source": "import"}
    rows = list(Message.objects.filter(conversation=conversation).order_by("turn_number"))
    assert [(m.turn_number, m.content) for m in rows] == [(1, "message 0"), (2, "message 1"), (3, "message 2")]
    assert [m.id for m in stored] == [m.id for m in rows]


def test_bulk_into_an_existing_conversation_continues_after_the_last_turn():
    conversation = services.conversation_begin()
    services.message_store(conversation_id=conversation.id, role="user", content="first", turn_number=4)
    before = Conversation.objects.get(pk=conversation.pk).updated_at
    _, stored = services.messages_store_bulk(conversation_id=str(conversation.id), messages=_messages(2))
    assert [m.turn_number for m in stored] == [5, 6]
    assert Conversation.objects.get(pk=conversation.pk).updated_at > before


def test_bulk_keeps_each_messages_own_created_at():
    _, stored = services.messages_store_bulk(
        messages=[
            {"role": "user", "content": "old", "created_at": "2023-05-08T13:56:00Z"},
            {"role": "assistant", "content": "older reply", "created_at": "2023-05-08T13:57:30+02:00"},
        ]
    )
    got = [m.created_at.isoformat() for m in Message.objects.order_by("turn_number")]
    assert got == ["2023-05-08T13:56:00+00:00", "2023-05-08T11:57:30+00:00"]
    assert len(stored) == 2


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"role": "robot", "content": "x"}, "messages[1].role"),
        ({"role": "user", "content": "  "}, "messages[1].content"),
        ({"role": "user", "content": "nul \x00 byte"}, "messages[1].content"),
        ({"role": "user", "content": "x", "metadata": [1]}, "messages[1].metadata"),
        ({"role": "user", "content": "x", "created_at": "soon"}, "messages[1].created_at"),
        ({"role": "user", "content": "x", "turn_number": 9}, "messages[1].turn_number"),
        ("just text", "messages[1]"),
    ],
)
def test_one_invalid_message_stores_nothing(bad, field):
    conversation = services.conversation_begin()
    with pytest.raises(InvalidInput) as err:
        services.messages_store_bulk(conversation_id=conversation.id, messages=[_messages(1)[0], bad, _messages(1)[0]])
    assert err.value.field == field
    assert Message.objects.count() == 0


def test_bulk_without_conversation_and_an_invalid_message_creates_no_conversation():
    with pytest.raises(InvalidInput):
        services.messages_store_bulk(messages=[{"role": "user", "content": "ok"}, {"role": "user"}])
    assert Conversation.objects.count() == 0


def test_bulk_limits_and_shape_errors(settings):
    with pytest.raises(InvalidInput) as empty:
        services.messages_store_bulk(messages=[])
    assert empty.value.field == "messages"
    with pytest.raises(InvalidInput) as too_many:
        services.messages_store_bulk(messages=_messages(services.MAX_BULK_MESSAGES + 1))
    assert too_many.value.field == "messages"
    with pytest.raises(NotFound):
        services.messages_store_bulk(conversation_id=uuid.uuid4(), messages=_messages(1))
    conversation = services.conversation_begin()
    with pytest.raises(InvalidInput) as mixed:
        services.messages_store_bulk(conversation_id=conversation.id, session_id="x", messages=_messages(1))
    assert mixed.value.field == "session_id"
    settings.WINNI_MAX_CONTENT_BYTES = 5
    with pytest.raises(PayloadTooLarge) as big:
        services.messages_store_bulk(messages=[{"role": "user", "content": "123456"}])
    assert big.value.field == "messages[0].content"
    assert Message.objects.count() == 0


def test_bulk_announces_every_stored_id(django_capture_on_commit_callbacks):
    seen = []

    def receiver(sender, kind, ids, **kwargs):
        seen.append((kind, ids))

    searchable_changed.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            _, stored = services.messages_store_bulk(messages=_messages(3))
    finally:
        searchable_changed.disconnect(receiver)
    assert seen == [("message", [m.id for m in stored])]


def test_list_pages_sorts_counts_and_filters_by_session():
    a = services.conversation_begin(session_id="s1")
    b = services.conversation_begin(session_id="s1")
    c = services.conversation_begin(session_id="s2")
    services.messages_store_bulk(conversation_id=a.id, messages=_messages(3))  # a is now the latest updated
    page, total, estimate = services.conversation_list(limit=2)
    assert (total, estimate) == (3, False)
    assert [x.id for x in page] == [a.id, c.id]
    assert [x.message_count for x in page] == [3, 0]
    page2, _, _ = services.conversation_list(limit=2, offset=2)
    assert [x.id for x in page2] == [b.id]
    by_created, _, _ = services.conversation_list(sort_by="created_at")
    assert [x.id for x in by_created] == [c.id, b.id, a.id]
    session, session_total, _ = services.conversation_list(session_id="s1")
    assert session_total == 2 and {x.id for x in session} == {a.id, b.id}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"offset": -1}, "offset"), ({"sort_by": "name"}, "sort_by")],
)
def test_list_rejects_bad_paging(kwargs, field):
    with pytest.raises(InvalidInput) as err:
        services.conversation_list(**kwargs)
    assert err.value.field == field


def test_delete_needs_force_and_cascades_to_messages_and_search(django_capture_on_commit_callbacks):
    conversation, stored = services.messages_store_bulk(messages=[{"role": "user", "content": "purple elephants"}] * 2)
    keep, _ = services.messages_store_bulk(messages=[{"role": "user", "content": "purple giraffes"}])
    with pytest.raises(InvalidInput) as err:
        services.conversation_delete(conversation_id=conversation.id)
    assert err.value.field == "force"
    assert Message.objects.count() == 3
    seen = []
    searchable_changed.connect(receiver := lambda sender, kind, ids, **kw: seen.append(set(ids)))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            assert services.conversation_delete(conversation_id=conversation.id, force=True) == 2
    finally:
        searchable_changed.disconnect(receiver)
    assert seen == [{m.id for m in stored}]
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    assert Message.objects.filter(conversation_id=conversation.id).count() == 0
    hits = services.message_search(query="purple").hits
    assert [h.message.conversation_id for h in hits] == [keep.id]
    with pytest.raises(NotFound):
        services.conversation_delete(conversation_id=conversation.id, force=True)


def test_list_total_is_exact_up_to_the_cap_then_estimated(monkeypatch):
    monkeypatch.setattr("conversations.services.messages.COUNT_EXACT_UP_TO", 3)
    for _ in range(3):
        services.conversation_begin(session_id="cap")
    assert services.conversation_list(session_id="cap")[1:] == (3, False)
    services.conversation_begin(session_id="cap")
    page, total, estimate = services.conversation_list(session_id="cap", limit=10)
    assert len(page) == 4 and estimate is True and total >= 4
