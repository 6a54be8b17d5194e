from django.apps import AppConfig


class LibrarianConfig(AppConfig):
    """The answer cache ("Librarian", seed 002), nested in memory/ beside the memories it answers
    from. Its tables keep the names they had when the cache lived in the memory app."""

    name = "memory.librarian"
    label = "librarian"
    verbose_name = "Answer cache"
    default_auto_field = "django.db.models.BigAutoField"
