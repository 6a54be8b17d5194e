"""One task through a real Celery worker process and a real Redis broker."""
import subprocess
import sys
import time

import pytest
import redis
from django.conf import settings

from tests.support import ROOT
from winni_site import health
from winni_site.celery import app
from winni_site.tasks import worker_heartbeat

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(live_server_env):
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "winni_site", "worker", "--pool", "solo", "--loglevel", "WARNING",
         "-n", f"test-{time.time_ns()}@%h"],
        cwd=ROOT, env=live_server_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    yield process
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()


@pytest.fixture
def through_broker():
    """The test settings run tasks eagerly; these tests need the real broker."""
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = True


def test_heartbeat_task_runs_in_a_real_worker(worker, through_broker, client):
    redis.Redis.from_url(settings.REDIS_URL).delete(health.HEARTBEAT_KEY)
    result = worker_heartbeat.delay()
    stamp = result.get(timeout=60)
    assert abs(stamp - time.time()) < 60
    assert health.heartbeat_age() is not None
    assert client.get("/healthz").json()["worker"]["status"] == "ok"
