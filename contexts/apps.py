from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from contexts.models import StartupContext
        from core.searchable import Searchable, register

        register(Searchable(kind="context", model=StartupContext, text=lambda c: f"{c.name}\n{c.content}",
                            label=lambda c: c.name))
