from django.apps import AppConfig


class LibrarianConfig(AppConfig):
    """The answer cache ("Librarian", seed 002), nested in memory/ beside the memories it answers
    from. Its tables keep the names they had when the cache lived in the memory app."""

    name = "memory.librarian"
    label = "librarian"
    verbose_name = "Answer cache"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core.projects import ProjectStore, register_store
        from memory.librarian.models import QueryMemory
        from memory.librarian.services.entries import entries_merge

        register_store(ProjectStore(label="cache_entries", model=QueryMemory, merge=entries_merge,
                                    global_applies=True))
