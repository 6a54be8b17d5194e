import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")

app = Celery("winni")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Task modules beyond `<app>.tasks`.
app.autodiscover_tasks(lambda: ["memory"], related_name="librarian_tasks")


@app.on_after_finalize.connect
def setup_periodic_tasks(sender: Celery, **kwargs: object) -> None:
    """The one beat schedule: every periodic task is declared here (HS setup_periodic_tasks)."""
    from django.conf import settings

    sender.add_periodic_task(
        float(settings.WINNI_HEARTBEAT_SECONDS),
        sender.signature("winni_site.tasks.worker_heartbeat"),
        name="worker heartbeat",
    )
    sender.add_periodic_task(
        float(settings.WINNI_EMBEDDING_SWEEP_SECONDS),
        sender.signature("memory.tasks.embed_backlog"),
        name="embedding backlog sweep",
    )
    sender.add_periodic_task(
        float(settings.LIBRARIAN_EVICT_INTERVAL_SECONDS),
        sender.signature("memory.librarian_tasks.librarian_evict"),
        name="answer cache expiry and eviction",
    )


@worker_ready.connect
def _first_heartbeat(**kwargs: object) -> None:
    """Report at once, so /healthz is green as soon as the worker is up (not one beat later)."""
    from winni_site import health

    health.heartbeat_record()
