from typing import Any

from django.apps import AppConfig
from django.db.models.signals import pre_migrate


class WinniSiteConfig(AppConfig):
    name = "winni_site"
    verbose_name = "Winni"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        pre_migrate.connect(_backup_before_migrate, sender=self, dispatch_uid="winni_backup_before_migrate")
        # The transcript page shows what automatic recall added to each prompt: the assembly wires
        # the agents' notes into the conversations admin (agents read the apps through their services only).
        from agents.autorecall import transcript_notes
        from conversations.admin import TRANSCRIPT_NOTES

        if transcript_notes not in TRANSCRIPT_NOTES:
            TRANSCRIPT_NOTES.append(transcript_notes)
        from core.projects import ProjectStore, register_store
        from winni_site.models import ApiToken

        # A token limited to a project that is merged away is limited to the target instead.
        register_store(ProjectStore(label="api_tokens", model=ApiToken.projects.through, counted=False,
                                    merge=_tokens_merge))


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
