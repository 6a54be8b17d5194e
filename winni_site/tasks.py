from celery import shared_task

from winni_site import health


@shared_task(name="winni_site.tasks.worker_heartbeat")
def worker_heartbeat() -> float:
    """Beat sends this every WINNI_HEARTBEAT_SECONDS; /healthz reports how old the last one is."""
    return health.heartbeat_record()
