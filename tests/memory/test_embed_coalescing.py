"""Live writes embedded in batches: a task that has rows to embed also takes the other rows of
its kind written since and still without a vector (memory.vectors.embedding_drain), so single-row
writes share model calls; rows another worker has claimed are left to it, and two workers
draining at once embed every row exactly once."""
from __future__ import annotations

import datetime as dt
import hashlib
import threading
from typing import Any, Iterator

import pytest
from django.db import connection, transaction
from django.utils import timezone

from memory import services as memory_services
from memory import vectors
from memory.models import Embedding, Memory
from memory.tasks import embed_rows
from tests.embed_servers import FakeProvider
from tests.support import start_celery_worker, stop_process, wait_for

MODEL = "fake-openai-embedding"
DIMS = 384



def _embed(keys: list) -> int:
    """Run the task here, as a worker would. Not .get()'s default: a real worker started earlier in
    this process leaves Celery thinking it runs inside a task, and then .get() refuses to block."""
    return embed_rows.apply(args=("memory", keys)).get(disable_sync_subtasks=False)

def text_vector(text: str, dims: int) -> list[float]:
    return [(byte + 1) / 256 for byte in hashlib.shake_256(text.encode()).digest(dims)]


@pytest.fixture
def provider(settings: Any) -> Iterator[FakeProvider]:
    fake = FakeProvider(vector_for=text_vector)
    settings.WINNI_EMBEDDING_PROVIDER = "openai"
    settings.WINNI_EMBEDDING_MODEL = MODEL
    settings.WINNI_EMBEDDING_URL = fake.url
    yield fake
    fake.stop()


def _texts(provider: FakeProvider) -> list[str]:
    return [text for _, body in list(provider.requests) for text in body["input"]]


def _text(n: int) -> str:
    return f"fact number {n}: host h{n} runs service s{n}"


def _store(count: int, start: int = 0) -> list[str]:
    """Memories written one at a time through the service, each queueing its own task on commit."""
    return [str(memory_services.memory_store(content=_text(n))[0].pk) for n in range(start, start + count)]


def _rows(count: int, start: int = 0) -> list[str]:
    """Memories written one after another whose tasks have not run (queued, as far as the test
    goes), one millisecond apart."""
    base = timezone.now()
    return [str(Memory.objects.create(content=_text(n), content_hash=memory_services.content_hash(_text(n)),
                                      created_at=base + dt.timedelta(milliseconds=n)).pk)
            for n in range(start, start + count)]


def _embedded(ids: list[str]) -> set[str]:
    return set(Embedding.objects.filter(kind="memory", model=MODEL, object_id__in=ids).values_list("object_id", flat=True))


@pytest.mark.django_db
def test_one_task_embeds_the_rows_written_after_its_own_in_one_call(provider, settings):
    older = _rows(2)
    ids = _rows(6, start=2)
    settings.WINNI_EMBEDDING_BATCH_SIZE = 5
    assert _embed([ids[0]]) == 5
    # One provider call for the task's row and the four written after it; the rows written before
    # it are left to their own tasks.
    assert len(provider.requests) == 1 and len(_texts(provider)) == 5
    assert _embedded(ids) == set(ids[:5]) and not _embedded(older)
    # The tasks of the rows it took find them embedded: no provider call.
    for key in ids[1:5]:
        assert _embed([key]) == 0
    assert len(provider.requests) == 1
    # The next one still waiting takes the rest.
    assert _embed([ids[5]]) == 1
    assert _embed([older[0]]) == 2  # the older two
    assert _embedded(ids + older) == set(ids + older)
    assert sorted(_texts(provider)) == sorted(Memory.objects.values_list("content", flat=True))


@pytest.mark.django_db
def test_a_task_for_a_deleted_row_drops_its_vectors_and_takes_nothing_else(provider):
    ids = _rows(2)
    Embedding.objects.create(kind="memory", object_id=ids[0], model="older-model", dimensions=DIMS,
                             vector=[1.0] + [0.0] * (DIMS - 1))
    Memory.objects.filter(pk=ids[0]).delete()
    assert _embed([ids[0]]) == 0
    assert not Embedding.objects.filter(object_id=ids[0]).exists()
    assert not _embedded(ids) and not provider.requests


def _hold_claim(key: str, taken: threading.Event, done: threading.Event) -> None:
    """Another worker: claims `key` on its own connection and holds it until `done`."""
    try:
        assert vectors.claim(kind="memory", model=MODEL, keys=[key]) == [key]
        taken.set()
        done.wait(30)
        vectors.release(kind="memory", keys=[key])
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_rows_claimed_by_another_worker_are_left_to_it(provider):
    ids = _rows(3)
    taken, done = threading.Event(), threading.Event()
    other = threading.Thread(target=_hold_claim, args=(ids[1], taken, done))
    other.start()
    try:
        assert taken.wait(30)
        # Neither its own claimed row nor a claimed row written later is embedded here.
        assert _embed([ids[1]]) == 0
        assert _embed([ids[0]]) == 2
        assert _embedded(ids) == {ids[0], ids[2]}
        # This connection holds no claim any more: a claim by another connection would succeed.
        assert _advisory_locks() == 0
    finally:
        done.set()
        other.join(30)
    assert _embed([ids[1]]) == 1
    assert _embedded(ids) == set(ids)


@pytest.mark.django_db(transaction=True)
def test_a_claim_is_released_when_its_connection_ends(provider):
    """A worker killed mid-batch: its connection ends, and so do its claims."""
    ids = _rows(1)
    taken = threading.Event()

    def hold_then_vanish() -> None:
        assert vectors.claim(kind="memory", model=MODEL, keys=ids) == ids
        taken.set()
        connection.close()  # no release

    other = threading.Thread(target=hold_then_vanish)
    other.start()
    other.join(30)
    assert taken.is_set()
    # The server ends the backend moments after its client went away, and its locks with it.
    wait_for(lambda: _advisory_locks(everyone=True) == 0, "the gone connection's claims to end", timeout=30)
    assert _embed(ids) == 1


def _advisory_locks(*, everyone: bool = False) -> int:
    """Advisory locks held in this test database (by this connection, or by `everyone`). Advisory
    locks belong to one database; other pytest-xdist workers' databases hold their own."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                       "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                       + ("" if everyone else " AND pid = pg_backend_pid()"))
        return cursor.fetchone()[0]


# --- a real worker -----------------------------------------------------------------------------


@pytest.fixture
def two_workers(live_server_env: dict[str, str], provider: FakeProvider) -> Iterator[Any]:
    env = {**live_server_env, "WINNI_EMBEDDING_PROVIDER": "openai", "WINNI_EMBEDDING_MODEL": MODEL,
           "WINNI_EMBEDDING_URL": provider.url, "WINNI_EMBEDDING_DIMENSIONS": str(DIMS)}
    process = start_celery_worker(env, pool="prefork", concurrency=2)
    yield process
    stop_process(process, timeout=20)


@pytest.mark.live
@pytest.mark.django_db(transaction=True)
def test_two_worker_processes_embed_single_row_writes_in_batches_and_each_row_once(two_workers, through_broker,
                                                                                    provider):
    # Warm up: the pool processes are up and have a connection before the burst.
    first = _store(1)
    wait_for(lambda: _embedded(first) == set(first), "the first row to be embedded")
    start = len(provider.requests)
    # A burst: 300 single-row writes whose tasks all reach the broker before the worker has embedded
    # any (one transaction, so the count of model calls does not depend on how fast this host is).
    with transaction.atomic():
        ids = _store(300, start=1)
    wait_for(lambda: _embedded(ids) == set(ids), "every row to be embedded", timeout=120)
    calls = len(provider.requests) - start
    sent = [text for _, body in list(provider.requests)[start:] for text in body["input"]]
    # One task per row was queued, yet the rows went in batches (64 at most), and no row was sent
    # twice (claims keep the two pool processes apart).
    assert calls <= 30, calls
    assert len(sent) == len(set(sent)) == 300, (len(sent), len(set(sent)))
    assert Embedding.objects.filter(kind="memory", model=MODEL).count() == 301
