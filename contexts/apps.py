from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    default_auto_field = "django.db.models.BigAutoField"
