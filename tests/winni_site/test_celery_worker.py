"""One task through a real Celery worker process and a real Redis broker."""
import time

import pytest
import redis
from django.conf import settings

from core import health
from tests.support import start_celery_worker, stop_process
from winni_site.tasks import worker_heartbeat

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(live_server_env):
    process = start_celery_worker(live_server_env)
    yield process
    stop_process(process)


def test_heartbeat_task_runs_in_a_real_worker(worker, through_broker, client):
    redis.Redis.from_url(settings.REDIS_URL).delete(health.HEARTBEAT_KEY)
    result = worker_heartbeat.delay()
    stamp = result.get(timeout=60)
    assert abs(stamp - time.time()) < 60
    assert health.heartbeat_age() is not None
    assert client.get("/healthz").json()["worker"]["status"] == "ok"


def test_the_worker_and_its_pool_run_at_the_configured_priority(live_server_env):
    import psutil

    from tests.support import wait_for

    process = start_celery_worker({**live_server_env, "WINNI_WORKER_NICE": "7"}, pool="prefork", concurrency=1)
    try:
        wait_for(lambda: psutil.Process(process.pid).nice() == 7, "the worker to lower its priority")
        pool = wait_for(lambda: psutil.Process(process.pid).children(), "the pool process")
        assert [child.nice() for child in pool] == [7]
    finally:
        stop_process(process)
