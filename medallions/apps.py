from django.apps import AppConfig


class MedallionsConfig(AppConfig):
    name = "medallions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from core import anchors
        from core.projects import ProjectStore, register_store
        from core.searchable import Searchable, register
        from medallions import anchoring
        from medallions.models import Medallion, Status

        # Only active medallions hold: superseded and archived ones leave recall unless asked for.
        register(Searchable(kind="medallion", model=Medallion, text=lambda m: m.search_text, label=str,
                            filters={"project": "project"},
                            current=lambda rows: rows.filter(status=Status.ACTIVE)))
        register_store(ProjectStore(label="medallions", model=Medallion))
        # Decisions and invariants that name files are anchored to them; a decision is superseded by its status.
        anchors.register(anchors.Anchoring(kind="medallion", load=anchoring.medallions_load,
                                           items=anchoring.medallion_items))
        anchors.register_supersession(anchors.Supersession(kind="decision", supersede=anchoring.decision_supersede))
