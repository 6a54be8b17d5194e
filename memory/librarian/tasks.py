"""Celery tasks of the answer cache: thin callers of memory.librarian.services (ids in, counts out)."""
from celery import shared_task

from memory.librarian import services

# The names are those the tasks had in memory/librarian_tasks.py: queued tasks and the beat
# schedule address a task by name, so they stay the same across the move.


@shared_task(name="memory.librarian_tasks.librarian_embed")
def librarian_embed(entry_id: int) -> bool:
    """Made when an entry enters warm (or is remembered): its query vector for L2 lookups."""
    return services.librarian_embed(entry_id=entry_id)


@shared_task(name="memory.librarian_tasks.librarian_evict")
def librarian_evict() -> dict[str, int]:
    """Beat, every LIBRARIAN_EVICT_INTERVAL_SECONDS: expiry, eviction beyond the limit, pruning, and
    new vectors for entries embedded under another model or query form."""
    counts = services.librarian_evict()
    counts["reembedded"] = services.librarian_embed_stale()
    return counts
