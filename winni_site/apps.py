from django.apps import AppConfig


class WinniSiteConfig(AppConfig):
    name = "winni_site"
    verbose_name = "Winni"
    default_auto_field = "django.db.models.BigAutoField"
