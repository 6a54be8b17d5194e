"""16 writers append to one conversation at once: the row lock gives turns 1..3200, no gap, no duplicate."""
import threading

import pytest
from django.db import connection

from conversations import services
from conversations.models import Message

WRITERS, PER_WRITER = 16, 200


def _fast_commits() -> None:
    """This thread's connection skips waiting for the WAL flush: the test is about locking, and
    3,200 flushes on a shared 2-core machine would dominate its run time."""
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO off")


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_get_gapless_turns():
    conversation = services.conversation_begin()
    errors: list[BaseException] = []
    start = threading.Barrier(WRITERS)

    def writer(n: int) -> None:
        try:
            _fast_commits()
            start.wait()
            for i in range(PER_WRITER):
                services.message_store(conversation_id=conversation.id, role="user", content=f"writer {n} line {i}")
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    turns = list(Message.objects.filter(conversation=conversation).order_by("turn_number").values_list("turn_number", flat=True))
    assert turns == list(range(1, WRITERS * PER_WRITER + 1))
    # Each writer's own messages keep their order.
    for n in range(WRITERS):
        mine = list(
            Message.objects.filter(conversation=conversation, content__startswith=f"writer {n} line ")
            .order_by("turn_number").values_list("content", flat=True)
        )
        assert mine == [f"writer {n} line {i}" for i in range(PER_WRITER)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_bulk_writers_do_not_interleave_turns():
    conversation = services.conversation_begin()
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            _fast_commits()
            for _ in range(5):
                services.messages_store_bulk(
                    conversation_id=conversation.id,
                    messages=[{"role": "user", "content": f"bulk {n} item {i}"} for i in range(20)],
                )
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    rows = list(Message.objects.filter(conversation=conversation).order_by("turn_number").values_list("turn_number", "content"))
    assert [turn for turn, _ in rows] == list(range(1, 801))
    # A batch is contiguous: item i of a batch sits i turns after its item 0.
    for start in range(0, 800, 20):
        batch = [content for _, content in rows[start : start + 20]]
        assert batch == [batch[0].rsplit(" ", 1)[0] + f" {i}" for i in range(20)]
