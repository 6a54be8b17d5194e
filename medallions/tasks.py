from celery import shared_task

from medallions import services


@shared_task(name="medallions.tasks.medallion_job_run")
def medallion_job_run(job_id: str) -> str:
    """Run one checkpoint job; its row records the outcome (done with the medallion, or failed)."""
    return str(services.medallion_job_run(job_id=job_id).status)


@shared_task(name="medallions.tasks.medallion_jobs_requeue")
def medallion_jobs_requeue(older_than_seconds: float = 0) -> int:
    """Queue again the checkpoint jobs a stop or a lost worker left pending (beat, and each worker at
    its start: winni_site/celery.py)."""
    return services.medallion_jobs_requeue(older_than_seconds=older_than_seconds)
