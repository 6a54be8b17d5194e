"""Celery tasks of the agents app: judging whether the agent used what automatic recall injected."""
from __future__ import annotations

from celery import shared_task


@shared_task(name="agents.tasks.injections_judge_pending", ignore_result=True)
def injections_judge_pending() -> int:
    """The beat's sweep (agents.use.JUDGE_EVERY_SECONDS): judge the injections whose turn is over,
    so the use prior and the dashboard have them without anyone opening the admin."""
    from agents import use

    return use.judge_pending()
