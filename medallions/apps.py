from django.apps import AppConfig


class MedallionsConfig(AppConfig):
    name = "medallions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from medallions.models import Medallion
        from core.searchable import Searchable, register

        register(Searchable(kind="medallion", model=Medallion, text=lambda m: m.search_text, label=str))
