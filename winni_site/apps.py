from typing import Any

from django.apps import AppConfig
from django.db.models.signals import pre_migrate


class WinniSiteConfig(AppConfig):
    name = "winni_site"
    verbose_name = "Winni"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        pre_migrate.connect(_backup_before_migrate, sender=self, dispatch_uid="winni_backup_before_migrate")
        from conversations.admin import TRANSCRIPT_NOTES
        from winni_site.autorecall import transcript_notes

        if transcript_notes not in TRANSCRIPT_NOTES:
            TRANSCRIPT_NOTES.append(transcript_notes)
        from core import health
        from core.projects import ProjectStore, register_store
        from winni_site.models import ApiToken

        health.register_check("capture", _capture_health)
        health.register_check("recall", _recall_health)

        # A token limited to a project that is merged away is limited to the target instead.
        register_store(ProjectStore(label="api_tokens", model=ApiToken.projects.through, counted=False,
                                    merge=_tokens_merge))


def _capture_health() -> dict[str, Any]:
    from winni_site.capture import capture_health

    return capture_health()


def _recall_health() -> dict[str, Any]:
    """Whether this process warmed the recall path before it listened (winni_site.asgi), and in how
    long: a web process reports "ok" from its first answer on."""
    from winni_site import autorecall

    report = autorecall.warm_up_report
    if report is None:
        return {"status": "cold", "warmed_in_ms": None}
    return {"status": report["status"], "warmed_in_ms": report.get("duration_ms"),
            **({"error": report["error"]} if "error" in report else {})}


def _tokens_merge(source: Any, target: Any) -> int:
    from winni_site.models import ApiToken

    links = ApiToken.projects.through.objects
    moved = 0
    for link in links.filter(project=source):
        if not links.filter(apitoken_id=link.apitoken_id, project=target).exists():
            links.create(apitoken_id=link.apitoken_id, project=target)
            moved += 1
        link.delete()
    return moved


def _backup_before_migrate(sender: AppConfig, plan: Any = None, using: str = "default", stdout: Any = None,
                           verbosity: int = 1, **kwargs: Any) -> None:
    """pre_migrate fires once per app with the whole plan; this one listens to winni_site only,
    so one `migrate` takes at most one backup (seed 000 NFR-2.4)."""
    if using != "default":
        return
    from winni_site.backups import backup_before_migrate

    def say(message: str) -> None:
        if stdout is not None and verbosity >= 1:
            stdout.write(f"  {message}\n")

    backup_before_migrate(plan=list(plan or []), progress=say)
