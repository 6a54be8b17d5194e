from django.contrib.postgres.fields import ArrayField
from django.db import models


class ApiToken(models.Model):
    """A bearer token for /mcp and /api/. Only the SHA-256 of the secret is stored."""

    class Scope(models.TextChoices):
        READ = "read"  # nothing that changes stored data
        WRITE = "write"  # what clients do: capture, store, search (the default)
        ADMIN = "admin"  # write, and manage tokens, export and import over the API

    name = models.CharField(max_length=100, unique=True)
    secret_sha256 = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.WRITE)
    # The MCP tool sets (winni_site/toolsets.py) this token may list and call; empty: every set the
    # server serves (WINNI_MCP_TOOLSETS). An agent given only `default` never sees the others.
    toolsets = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    # Limited to these projects' rows everywhere (core.access); none: every project and the global rows.
    projects = models.ManyToManyField("core.Project", blank=True, related_name="api_tokens")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return self.name

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class BackupRun(models.Model):
    """One scheduled backup (Celery task): history for the admin, and the handle that makes a
    redelivered task (worker killed mid-backup, acks_late) finish the same run, not start another."""

    class Status(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    task_id = models.CharField(max_length=64, unique=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    attempts = models.PositiveIntegerField(default=0)
    worker_pid = models.IntegerField(null=True, blank=True)
    path = models.TextField(blank=True)
    size_bytes = models.BigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"backup {self.started_at:%Y-%m-%d %H:%M} {self.status}"
