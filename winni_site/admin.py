from django.contrib import admin

from winni_site.models import ApiToken, BackupRun


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Read-only: tokens are made and revoked with `manage.py winni_token` (the secret is shown once)."""

    list_display = ("name", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("name", "created_at", "last_used_at", "revoked_at")
    exclude = ("secret_sha256",)

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False


@admin.register(BackupRun)
class BackupRunAdmin(admin.ModelAdmin):
    """Read-only history of scheduled backups (`manage.py winni_backup` runs are not listed)."""

    list_display = ("started_at", "status", "attempts", "size_bytes", "path", "finished_at")
    list_filter = ("status",)
    readonly_fields = [f.name for f in BackupRun._meta.fields]

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False
