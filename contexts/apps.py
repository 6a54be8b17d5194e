from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from contexts.models import StartupContext
        from contexts.services import contexts_merge
        from core.projects import ProjectStore, register_store
        from core.searchable import Searchable, register

        register(Searchable(kind="context", model=StartupContext, text=lambda c: f"{c.name}\n{c.content}",
                            label=lambda c: c.name, filters={"project": "project"}))
        register_store(ProjectStore(label="contexts", model=StartupContext, merge=contexts_merge,
                                    global_applies=True))
