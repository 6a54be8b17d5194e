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
