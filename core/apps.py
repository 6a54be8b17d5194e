from django.apps import AppConfig


class CoreConfig(AppConfig):
    """The kernel as a Django app: it owns the tables every app stands on (projects and their
    identity keys). It is installed like an app but is not one of WINNI_APPS: it has no MCP
    surface or URLs of its own (the assembly serves projects' interfaces)."""

    name = "core"
    verbose_name = "Projects"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core.searchable import searchable_changed
        from core.tasks import anchors_enqueue

        # Every committed write of a searchable kind: its file changes and its items' anchors, in
        # the worker (core.tasks).
        searchable_changed.connect(anchors_enqueue, dispatch_uid="core.anchors")
