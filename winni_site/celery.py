import os

from celery import Celery
from celery.signals import worker_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")

app = Celery("winni")
# A checkpoint job still pending this long after it was queued is queued again (beat).
JOBS_REQUEUE_SECONDS = 300
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def setup_periodic_tasks(sender: Celery, **kwargs: object) -> None:
    """The one beat schedule: every periodic task is declared here (HS setup_periodic_tasks)."""
    from django.conf import settings

    sender.add_periodic_task(
        float(settings.WINNI_HEARTBEAT_SECONDS),
        sender.signature("winni_site.tasks.worker_heartbeat"),
        name="worker heartbeat",
    )
    if settings.WINNI_BACKUP_INTERVAL_HOURS > 0:
        sender.add_periodic_task(
            settings.WINNI_BACKUP_INTERVAL_HOURS * 3600.0,
            sender.signature("winni_site.tasks.backup_scheduled"),
            name="backup",
        )
    sender.add_periodic_task(24 * 3600.0, sender.signature("winni_site.tasks.retention_purge"), name="retention purge")
    sender.add_periodic_task(
        float(settings.WINNI_EMBEDDING_SWEEP_SECONDS),
        sender.signature("memory.tasks.embed_backlog"),
        name="embedding backlog sweep",
    )
    if settings.WINNI_RECALL_PROJECT_INDEX_MIN > 0:
        from memory.vectors import PROJECT_INDEX_SYNC_SECONDS

        sender.add_periodic_task(float(PROJECT_INDEX_SYNC_SECONDS),
                                 sender.signature("memory.tasks.project_indexes_sync"),
                                 name="project vector indexes")
    sender.add_periodic_task(
        float(JOBS_REQUEUE_SECONDS), sender.signature("medallions.tasks.medallion_jobs_requeue",
                                                      kwargs={"older_than_seconds": JOBS_REQUEUE_SECONDS}),
        name="medallion jobs left pending")
    from agents.use import JUDGE_EVERY_SECONDS

    sender.add_periodic_task(float(JUDGE_EVERY_SECONDS), sender.signature("agents.tasks.injections_judge_pending"),
                             name="injected items' use")
    sender.add_periodic_task(
        float(settings.LIBRARIAN_EVICT_INTERVAL_SECONDS),
        # The answer cache's task keeps the name it had as memory/librarian_tasks.py, so tasks
        # queued before an upgrade still run.
        sender.signature("memory.librarian_tasks.librarian_evict"),
        name="answer cache expiry and eviction",
    )


@worker_ready.connect
def _first_heartbeat(**kwargs: object) -> None:
    """Report at once, so /healthz is green as soon as the worker is up (not one beat later), and
    queue again the checkpoint jobs a stop left pending (their queued tasks did not survive it)."""
    from core import health

    health.heartbeat_record()
    app.send_task("medallions.tasks.medallion_jobs_requeue", kwargs={"older_than_seconds": 0})


@worker_init.connect
def _lower_priority(**kwargs: object) -> None:
    """The worker (and the pool processes it forks, which inherit it) runs at WINNI_WORKER_NICE: on
    a loaded host a burst of writes to embed must not slow the searches the web processes answer."""
    from django.conf import settings

    current = os.nice(0)
    if settings.WINNI_WORKER_NICE > current:
        os.nice(settings.WINNI_WORKER_NICE - current)
