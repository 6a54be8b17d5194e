from __future__ import annotations

import sys
from typing import Any, Iterator

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.support import LiveServer, McpClient, celery_reconnect, child_env
from winni_site import auth


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files holding long tests (marked slow: whole `winni run`s, agents' sessions, the schema fuzz
    runs, scratch-database migrations) first, each file's tests in the order pytest-django gave them.
    pytest-xdist hands out files in this order (./winni passes --no-loadscope-reorder: by default it
    sorts files by test count, which left the long one-test files for the end), so the last file a
    worker takes is a short one and the two finish together."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


@pytest.fixture
def token_secret(db: Any) -> str:
    _, secret = auth.token_create(name="alice")
    return secret


@pytest.fixture
def api(token_secret: str) -> APIClient:
    """A REST client authenticated with alice's token."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_secret}")
    return client


@pytest.fixture
def anonymous_api() -> APIClient:
    return APIClient()


@pytest.fixture
def staff_user(db: Any) -> Any:
    return get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-123")


@pytest.fixture(scope="session", autouse=True)
def recall_helpers_stop(django_db_setup: Any) -> Iterator[None]:
    """Hybrid recall's helper threads, and the ASGI application's request threads when a test ran
    it in process, hold connections to the test database; they must be gone before the database
    is dropped."""
    yield
    from core import connections

    connections.helpers_shutdown()
    if "winni_site.asgi" in sys.modules:
        sys.modules["winni_site.asgi"].request_threads_shutdown()


@pytest.fixture(scope="session")
def live_server_env(django_db_setup: Any, django_db_blocker: Any) -> dict[str, str]:
    """Environment for child processes: the test database, the test Redis."""
    from django.db import connection

    with django_db_blocker.unblock():
        return child_env(connection.settings_dict)


@pytest.fixture(scope="session")
def winni_server(live_server_env: dict[str, str]) -> Iterator[LiveServer]:
    """One real uvicorn process (Django + MCP) for the whole session. Tests that use it need
    committed data: they take `live_token` (which uses transactional_db)."""
    server = LiveServer(live_server_env)
    yield server
    server.stop()


@pytest.fixture
def live_token(transactional_db: Any) -> str:
    _, secret = auth.token_create(name="alice")
    return secret


@pytest.fixture(params=["legacy", "auto"])
def mcp(request: pytest.FixtureRequest, winni_server: LiveServer, live_token: str) -> McpClient:
    """The official mcp client over streamable HTTP, in Claude Code's legacy mode and modern mode."""
    return McpClient(winni_server.url, live_token, mode=request.param)


@pytest.fixture
def mcp_legacy(winni_server: LiveServer, live_token: str) -> McpClient:
    return McpClient(winni_server.url, live_token, mode="legacy")


@pytest.fixture
def through_broker() -> Iterator[None]:
    """The test settings run tasks eagerly; tests with a real worker need the real broker."""
    from celery.result import allow_join_result

    from winni_site.celery import app

    app.conf.task_always_eager = False
    celery_reconnect(app)  # connections built from this configuration, whatever an earlier test did
    # Eager .delay() from several threads at once (the concurrency tests) can leave Celery's
    # process-wide "waiting for a result would block" flag set: it is saved and restored without a
    # lock. Nothing in this process runs inside a task, so waiting for a result is fine here.
    with allow_join_result():
        yield
    app.conf.task_always_eager = True


@pytest.fixture(autouse=True)
def celery_app_stays_current() -> Iterator[None]:
    """Tasks (`shared_task`) go to Celery's *current* app, and every `Celery(...)` made without
    set_as_current=False becomes it: a test that builds one would send every later test's tasks in
    this process to an unconfigured app (not eager, no broker, no result backend), and which tests
    come later changes with pytest-xdist. Likewise the app must stay on Celery's list of active apps
    (`app.close()` takes it off), or a `shared_task` module imported later is never registered with
    it. Put the project's app back and fail the test that did it."""
    from celery import _state

    from winni_site.celery import app

    yield
    # Eager tasks started from several threads at once (a prompt captured beside its recall queues
    # its embedding and its anchoring) save and restore Celery's process-wide "waiting for a result
    # would block" flag without a lock, and can leave it set: a later test's .get() then fails as if
    # it ran inside a task. Nothing in this process is a worker, so the flag is always off here.
    _state._set_task_join_will_block(False)
    current = _state.get_current_app()
    if current is not app:
        app.set_current()
        pytest.fail(f"the test made {current!r} Celery's current app; build it with set_as_current=False")
    if app not in _state._get_active_apps():
        _state._register_app(app)
        pytest.fail("the test closed the project's Celery app (app.close()); drop its pool instead")


@pytest.fixture(autouse=True)
def embedding_sweep_count_forgotten() -> Iterator[None]:
    """The embedding sweep's last count (in Redis, and cached per process for 30 s) describes the
    rows of the database, so it goes when the test's rows go. Left behind, it tells a later test's
    search that every memory created before that sweep has its vector (vectors.settled_since), and
    read-your-writes misses that test's rows still waiting for theirs."""
    yield
    import redis

    from core import health
    from memory import vectors

    vectors._settled.clear()
    # The planner's statistics as this process last read them (BM25's row count and lexeme
    # frequencies, kept 5 minutes): they described that test's tables, not the next test's.
    from memory import retrieval

    retrieval._table_stats.clear()
    try:
        health.redis_client().delete(vectors.BACKLOG_KEY)
    except redis.RedisError:
        pass  # no Redis (a test stopped it): nothing recorded there either


def _hnsw_scans_past_dead_entries(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Every test connection lets an HNSW index walk read past dead entries (see
    searched_tables_vacuumed). Set on each new connection: a transactional test closes the
    connections when it ends, and a one-time SET was lost with them (the ranking tests after one
    then walked with the default hnsw.max_scan_tuples, 20,000 entries, and found fewer rows
    whenever earlier files on the worker had left more dead entries than that)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # …and its memory: an iterative scan also stops at work_mem × hnsw.scan_mem_multiplier
            # (4 MB), which a walk through many dead entries fills (3 rows asked, 2 returned).
            cursor.execute("SET hnsw.max_scan_tuples = 1000000; SET hnsw.scan_mem_multiplier = 100")


@pytest.fixture(scope="session", autouse=True)
def hnsw_scans_past_dead_entries() -> Iterator[None]:
    from django.db.backends.signals import connection_created

    connection_created.connect(_hnsw_scans_past_dead_entries, dispatch_uid="tests.hnsw_scans_past_dead_entries")
    yield
    connection_created.disconnect(dispatch_uid="tests.hnsw_scans_past_dead_entries")


@pytest.fixture(scope="module")
def searched_tables_vacuumed(django_db_setup: Any, django_db_blocker: Any) -> None:
    """The searched tables vacuumed and analysed before a module of ranking tests. Earlier tests'
    rolled-back rows stay in the tables and their HNSW index as dead entries until a vacuum, and
    their statistics outlive them: an index walk then returned fewer live rows than the table holds
    and the planner took a test's few rows for thousands, so which rows a search found depended on
    what ran before on the same worker. VACUUM cannot run inside a test's transaction: once per
    module, before its first test."""
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE) conversations_conversation, conversations_message, memory_memory, "
                       "memory_embedding")
        # The module's own rolled-back rows leave dead HNSW entries too: an index walk stops after
        # hnsw.max_scan_tuples entries (20,000), dead ones included, and returned fewer live rows
        # (raised on every test connection: hnsw_scans_past_dead_entries; this one may predate it).
        cursor.execute("SET hnsw.max_scan_tuples = 1000000; SET hnsw.scan_mem_multiplier = 100")
