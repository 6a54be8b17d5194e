from django.contrib import admin

from winni_site.models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Read-only: tokens are made and revoked with `manage.py winni_token` (the secret is shown once)."""

    list_display = ("name", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("name", "created_at", "last_used_at", "revoked_at")
    exclude = ("secret_sha256",)

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False
