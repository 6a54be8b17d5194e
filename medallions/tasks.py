from celery import shared_task

from medallions import services


@shared_task(name="medallions.tasks.medallion_job_run")
def medallion_job_run(job_id: str) -> str:
    """Run one checkpoint job; its row records the outcome (done with the medallion, or failed)."""
    return str(services.medallion_job_run(job_id=job_id).status)
