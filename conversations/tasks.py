from celery import shared_task


@shared_task(name="conversations.tasks.session_digest_write_task")
def session_digest_write_task(conversation_id: str, trigger: str = "") -> str | None:
    """Write a session's digest (conversations.services.digest) when it ends or compacts; the
    digest's id, or None when the session has no text (the log says why)."""
    from conversations.services.digest import session_digest_write

    digest = session_digest_write(conversation_id=conversation_id, trigger=trigger)
    return str(digest.pk) if digest is not None else None
