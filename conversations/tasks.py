from celery import shared_task


@shared_task(name="conversations.tasks.session_digest_write_task")
def session_digest_write_task(conversation_id: str, trigger: str = "") -> str | None:
    """Write a session's digest (conversations.services.digest) when it ends or compacts; the
    digest's id, or None when the session has no text (the log says why)."""
    from conversations.services.digest import session_digest_write

    digest = session_digest_write(conversation_id=conversation_id, trigger=trigger)
    return str(digest.pk) if digest is not None else None


@shared_task(name="conversations.tasks.session_digest_model_write_task")
def session_digest_model_write_task(digest_id: str) -> str | None:
    """Rewrite a digest waiting for the configured LLM (conversations.services.digest); its writer,
    or None when it no longer waits."""
    from conversations.services.digest import session_digest_model_write

    digest = session_digest_model_write(digest_id=digest_id)
    return digest.writer if digest is not None else None
