import uuid
from collections.abc import Collection

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.searchable import tsvector_of


class StartupContext(models.Model):
    """Named text loaded at the start of an agent session (seed 001 `startup_contexts`)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Unique within its project, and among the global contexts (the constraints below).
    name = models.TextField()
    content = models.TextField()
    # None: a global context, loaded in every project's sessions (before the project's own).
    project = models.ForeignKey("core.Project", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="startup_contexts")
    is_active = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    search_vector = models.GeneratedField(
        expression=tsvector_of("name", "content"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="ctx_name_not_empty"),
            models.UniqueConstraint(fields=["project", "name"], condition=Q(project__isnull=False),
                                    name="ctx_unique_name_in_project"),
            models.UniqueConstraint(fields=["name"], condition=Q(project__isnull=True), name="ctx_unique_global_name"),
            # At most one active context per project plus one global one, enforced by the database
            # (seed 001's partial unique index, per scope).
            models.UniqueConstraint(fields=["project"], condition=Q(is_active=True, project__isnull=False),
                                    name="ctx_single_active_in_project"),
            models.UniqueConstraint(fields=["is_active"], condition=Q(is_active=True, project__isnull=True),
                                    name="ctx_single_active"),
        ]
        indexes = [GinIndex(fields=["search_vector"], name="ctx_search_vector")]

    def __str__(self) -> str:
        return self.name

    def validate_constraints(self, exclude: Collection[str] | None = None) -> None:
        # Activating a context switches the previous one off in the same transaction
        # (contexts.services), so a form must not refuse it for "another context is active"; the
        # names are checked by the service too, with a message naming the project.
        super().validate_constraints(exclude={*(exclude or ()), "is_active", "project", "name"})


class AuditAction(models.TextChoices):
    CREATE = "create"
    UPDATE = "update"
    ACTIVATE = "activate"
    DEACTIVATE = "deactivate"
    DELETE = "delete"


class StartupContextAudit(models.Model):
    """Who changed which context how, with the content hash before and after. Kept after the
    context itself is deleted (name copied, no foreign key)."""

    id = models.BigAutoField(primary_key=True)
    context_name = models.TextField(db_index=True)
    # The context's project (None: a global context); SET_NULL keeps the trail of a deleted project.
    project = models.ForeignKey("core.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=16, choices=AuditAction.choices)
    actor = models.TextField()
    at = models.DateTimeField(default=timezone.now, db_index=True)
    sha256_before = models.CharField(max_length=64, blank=True, default="")
    sha256_after = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.context_name} by {self.actor}"
