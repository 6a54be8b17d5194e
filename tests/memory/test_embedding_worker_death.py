"""Worker death in the middle of an embedding: a real Celery worker (one prefork pool process)
embeds through the OpenAI-compatible provider against a small HTTP server in this process. Its
pool process is killed with kill -9 while the server holds the embedding request; acks_late +
reject_on_worker_lost put the message back on the queue, the next pool process asks for the same
texts again and stores them. Every row ends up with exactly one vector under the model, the one
the provider gives for its text; nothing is lost, nothing is stored twice.

The rows are written through the service layer in this (transactional) test, so their embedding
tasks are queued by the real on-commit path (`announce_changed` → `memory.tasks.enqueue`) and
reach the worker through the real broker (`through_broker`).

Without acks_late the message would have been acknowledged when the killed process took it, and
without reject_on_worker_lost it would be acknowledged when the process died: either way no second
request for the held texts arrives and the test fails waiting for it."""
from __future__ import annotations

import hashlib
import signal
from typing import Any, Iterator

import numpy as np
import psutil
import pytest

from conversations import services as conversation_services
from memory import embeddings
from memory import services as memory_services
from memory.models import Embedding
from memory.tasks import embed_rows
from tests.embed_servers import FakeProvider
from tests.support import start_celery_worker, stop_process, wait_for

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

MODEL = "fake-openai-embedding"
DIMS = 384
WAIT = 90.0


def text_vector(text: str, dims: int) -> list[float]:
    """A vector that differs from text to text and is the same every time for one text."""
    return [(byte + 1) / 256 for byte in hashlib.shake_256(text.encode()).digest(dims)]


def stored_vector(text: str) -> list[float]:
    """What Winni stores for `text`: the provider's vector, checked and normalised."""
    return embeddings.check_vectors([text_vector(text, DIMS)], count=1, dimensions=DIMS, model=MODEL)[0]


@pytest.fixture
def provider(settings: Any) -> Iterator[FakeProvider]:
    fake = FakeProvider(vector_for=text_vector)
    settings.WINNI_EMBEDDING_PROVIDER = "openai"
    settings.WINNI_EMBEDDING_MODEL = MODEL
    settings.WINNI_EMBEDDING_URL = fake.url
    # Messages embedded alone, so that each row's vector is the provider's vector for one text
    # (how a message's vector is summed from its turn and context is tested in test_embed_recall).
    settings.WINNI_EMBEDDING_CONTEXT_WEIGHT = 0.0
    yield fake
    fake.stop()


@pytest.fixture
def embedding_worker(live_server_env: dict[str, str], provider: FakeProvider) -> Iterator[Any]:
    """A real worker with one pool process (killable on its own, like an OOM kill), embedding
    through the OpenAI-compatible provider at `provider`."""
    env = {**live_server_env, "WINNI_EMBEDDING_PROVIDER": "openai", "WINNI_EMBEDDING_MODEL": MODEL,
           "WINNI_EMBEDDING_URL": provider.url, "WINNI_EMBEDDING_DIMENSIONS": str(DIMS),
           "WINNI_EMBEDDING_CONTEXT_WEIGHT": "0"}
    process = start_celery_worker(env, pool="prefork")
    yield process
    stop_process(process, timeout=20)


def _inputs(provider: FakeProvider) -> list[list[str]]:
    return [body["input"] for _, body in list(provider.requests)]


def _vectors(kind: str, ids: list[str]) -> list[Embedding]:
    return list(Embedding.objects.filter(kind=kind, model=MODEL, object_id__in=ids).order_by("pk"))


def _assert_one_right_vector_each(kind: str, texts: dict[str, str]) -> list[Embedding]:
    """Exactly one vector per row under MODEL, and it is the provider's vector for the row's text."""
    rows = _vectors(kind, list(texts))
    assert sorted(row.object_id for row in rows) == sorted(texts)
    for row in rows:
        np.testing.assert_allclose(np.asarray(row.vector), stored_vector(texts[row.object_id]), atol=1e-6)
    return rows


def _store_rows() -> tuple[dict[str, str], dict[str, str]]:
    """Three messages in one bulk write (one embedding task for all three) and one memory."""
    _, messages = conversation_services.messages_store_bulk(messages=[
        {"role": "user", "content": "the staging database lives on host pg-stage-2"},
        {"role": "assistant", "content": "noted: staging runs PostgreSQL 17 with pgvector"},
        {"role": "user", "content": "backups of staging are kept for fourteen days"},
    ])
    memory, _ = memory_services.memory_store(content="deployments happen on Tuesdays after the standup")
    return {str(m.pk): m.content for m in messages}, {str(memory.pk): memory.content}


def test_an_embedding_survives_the_death_of_its_worker_process(embedding_worker, through_broker, provider):
    provider.hold_next()
    messages, memories = _store_rows()
    assert provider.held.wait(WAIT), "no embedding request reached the provider"
    held_texts = _inputs(provider)[0]
    assert sorted(held_texts) in (sorted(messages.values()), sorted(memories.values()))

    # Kill the pool process whose embedding request is being held (found by its connection).
    pool = psutil.Process(embedding_worker.pid).children(recursive=True)
    port = provider.held_client[1]
    busy = [p for p in pool if any(c.laddr and c.laddr.port == port for c in p.net_connections("tcp"))]
    assert len(busy) == 1, pool
    busy[0].send_signal(signal.SIGKILL)
    _, alive = psutil.wait_procs(busy, timeout=30)
    assert not alive
    provider.release()

    # The message comes back: a new pool process asks for the same texts again.
    wait_for(lambda: _inputs(provider).count(held_texts) == 2, "the task to be redelivered")
    wait_for(lambda: len(_vectors("message", list(messages))) == 3 and len(_vectors("memory", list(memories))) == 1,
              "every row to be embedded")
    new_pool = psutil.Process(embedding_worker.pid).children(recursive=True)
    assert busy[0].pid not in {p.pid for p in new_pool}

    _assert_one_right_vector_each("message", messages)
    _assert_one_right_vector_each("memory", memories)
    # One request per task, plus the one repeated after the kill.
    assert sorted(map(sorted, _inputs(provider))) == sorted(
        [sorted(held_texts), sorted(messages.values()), sorted(memories.values())])
    assert Embedding.objects.filter(model=MODEL).count() == 4


def test_a_redelivered_task_that_finds_its_vectors_stored_adds_none(embedding_worker, through_broker, provider):
    messages, memories = _store_rows()
    wait_for(lambda: len(_vectors("message", list(messages))) == 3 and len(_vectors("memory", list(memories))) == 1,
              "every row to be embedded")
    before = [(row.pk, row.created_at) for row in _assert_one_right_vector_each("message", messages)]
    requests = len(provider.requests)

    # The same message again, as when a worker dies after storing the vectors but before the ack:
    # the task finds every vector stored, asks the provider nothing and stores nothing.
    ids = list(messages)
    assert embed_rows.apply_async(("message", ids), ignore_result=False).get(timeout=WAIT) == 0
    assert len(provider.requests) == requests
    assert [(row.pk, row.created_at) for row in _assert_one_right_vector_each("message", messages)] == before

    # The race: the redelivered task checked before the first attempt's vector was committed, so
    # it asks the provider again; the first attempt commits while the request is held. The late
    # write must neither fail (unique constraint) nor add a second vector.
    late_id = ids[1]
    Embedding.objects.filter(kind="message", object_id=late_id, model=MODEL).delete()
    provider.hold_next()
    result = embed_rows.apply_async(("message", ids), ignore_result=False)
    assert provider.held.wait(WAIT), "the redelivered task did not ask the provider"
    assert _inputs(provider)[-1] == [messages[late_id]]
    first = Embedding.objects.create(kind="message", object_id=late_id, model=MODEL, dimensions=DIMS,
                                     vector=stored_vector(messages[late_id]))
    provider.release()
    # It counts the one row it embedded; an IntegrityError in the worker would be raised here.
    assert result.get(timeout=WAIT) == 1
    rows = _assert_one_right_vector_each("message", messages)
    assert [row.pk for row in rows if row.object_id == late_id] == [first.pk]
    assert Embedding.objects.filter(model=MODEL).count() == 4
