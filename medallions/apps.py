from django.apps import AppConfig


class MedallionsConfig(AppConfig):
    name = "medallions"
    default_auto_field = "django.db.models.BigAutoField"
