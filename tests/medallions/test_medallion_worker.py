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


def test_a_worker_at_its_start_runs_the_jobs_a_stop_left_pending(live_server_env):
    """The job was recorded but its queued task is gone (Winni stopped before a worker took it,
    and the embedded Redis keeps nothing): the next worker's start queues it again."""
    from medallions.models import MedallionJob

    job = MedallionJob.objects.create(graph_nodes=SCOPE["graph_nodes"], tags=SCOPE["tags"],
                                      evidence=services.validate_evidence(SESSION), actor="alice",
                                      provider="extractive")
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "winni_site", "worker", "--pool", "solo", "--loglevel", "WARNING",
         "-n", f"medallion-{time.time_ns()}@%h"],
        cwd=ROOT, env=live_server_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        finished = services.medallion_job_wait(job_id=job.id, wait_seconds=60)
    finally:
        process.terminate()
        process.wait(15)
    assert finished.status == "done", (finished.status, finished.error)
