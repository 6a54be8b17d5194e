"""A checkpoint job through a real Celery worker process and the real Redis broker."""
import subprocess
import sys
import time

import pytest

from medallions import services
from medallions.models import Medallion
from tests.medallion_support import SCOPE, SESSION
from tests.support import ROOT
from winni_site.celery import app

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(live_server_env):
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "winni_site", "worker", "--pool", "solo", "--loglevel", "WARNING",
         "-n", f"medallion-{time.time_ns()}@%h"],
        cwd=ROOT, env=live_server_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    app.conf.task_always_eager = False
    yield process
    app.conf.task_always_eager = True
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()


def test_checkpoint_runs_in_the_worker(worker):
    job = services.medallion_checkpoint(scope=SCOPE, evidence=SESSION, wait_seconds=0, actor="alice")
    assert job.status in ("pending", "running", "done")
    finished = services.medallion_job_wait(job_id=job.id, wait_seconds=60)
    assert (finished.status, finished.operation) == ("done", "generate"), finished.error
    assert finished.started_at and finished.finished_at
    assert Medallion.objects.get().graph_nodes == SCOPE["graph_nodes"]
