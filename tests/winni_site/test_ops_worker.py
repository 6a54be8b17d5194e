"""Worker death: a Celery pool process killed with kill -9 in the middle of a scheduled backup.
With acks_late + reject_on_worker_lost the message goes back to the queue, the next process
finishes the same run; one BackupRun row, one backup, no half-written file."""
from __future__ import annotations

import os
import signal

import psycopg
import pytest
from django.db import connection

from tests.support import start_celery_worker, stop_process, wait_for
from winni_site import backups
from winni_site.models import BackupRun
from winni_site.tasks import backup_scheduled

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def backup_dir(tmp_path):
    return tmp_path / "backups"


@pytest.fixture
def prefork_worker(live_server_env, backup_dir):
    """A real worker with one pool process (killable on its own, like an OOM kill)."""
    process = start_celery_worker({**live_server_env, "WINNI_BACKUP_DIR": str(backup_dir)}, pool="prefork")
    yield process
    stop_process(process, timeout=20)


def _run():
    return BackupRun.objects.order_by("pk").first()


def test_a_backup_survives_the_death_of_its_worker_process(prefork_worker, through_broker, backup_dir):
    settings_dict = connection.settings_dict
    blocker = psycopg.connect(host=settings_dict["HOST"], port=settings_dict["PORT"], user=settings_dict["USER"],
                              dbname=settings_dict["NAME"])
    # Hold a lock the backup needs, so the task is certainly mid-run when its process is killed.
    blocker.execute("LOCK TABLE conversations_message IN ACCESS EXCLUSIVE MODE")
    try:
        result = backup_scheduled.delay()
        first = wait_for(lambda: (r := _run()) and r.worker_pid and r.attempts == 1 and r, "the task to start")
        assert first.status == BackupRun.Status.RUNNING and first.task_id == result.id
        os.kill(first.worker_pid, signal.SIGKILL)

        second = wait_for(lambda: (r := _run()) and r.attempts == 2 and r, "the task to be redelivered")
        assert second.worker_pid != first.worker_pid
    finally:
        blocker.rollback()
        blocker.close()

    done = wait_for(lambda: (r := _run()) and r.status == BackupRun.Status.DONE and r, "the backup to finish")
    assert BackupRun.objects.count() == 1 and done.attempts == 2
    finished = backups.backup_list(folder=backup_dir)
    assert [str(b.path) for b in finished] == [done.path]
    backups.backup_verify(path=finished[0].path)
    # The killed attempt left nothing behind (its pg_dump died with it; its temp file was removed).
    assert sorted(p.name for p in backup_dir.iterdir()) == [finished[0].path.name, finished[0].manifest_path.name]
