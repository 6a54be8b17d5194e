from celery import shared_task

from core import health


@shared_task(name="winni_site.tasks.worker_heartbeat")
def worker_heartbeat() -> float:
    """Beat sends this every WINNI_HEARTBEAT_SECONDS; /healthz reports how old the last one is."""
    return health.heartbeat_record()


@shared_task(name="winni_site.tasks.backup_scheduled", bind=True, acks_late=True)
def backup_scheduled(self) -> str:
    """Beat sends this every WINNI_BACKUP_INTERVAL_HOURS. acks_late: a worker killed mid-backup
    leaves the message unacknowledged and the task runs again (backups.backup_scheduled)."""
    from winni_site import backups

    return backups.backup_scheduled(task_id=self.request.id or "eager").path


@shared_task(name="winni_site.tasks.retention_purge")
def retention_purge() -> dict:
    """Daily: delete rows past WINNI_RETENTION_DAYS_* (nothing when retention is off)."""
    from winni_site import maintenance

    return {store: entry["rows"] for store, entry in maintenance.retention_purge().items()}
