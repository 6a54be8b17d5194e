"""Projects: the scope every store's rows belong to (nullable everywhere: no project = global).

A project has a display name, a unique slug (what interfaces and scope tags use: `repo:<slug>`)
and identity keys. A key is what a session can tell about where it runs (a normalised git remote,
the repository's root commit, the git root's path, a working directory) or an alias (an earlier
name: a legacy folder name, a merged project's slug). One key belongs to one project
(unique (kind, value)); core.projects resolves a session's keys to its project."""
from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone


class KeyKind(models.TextChoices):
    REMOTE = "remote"  # host/org/repo of the origin remote, normalised
    ROOT_COMMIT = "root_commit"  # the repository's first commit (the smallest hash when several)
    PATH = "path"  # absolute path of a git root (a clone, a worktree)
    CWD = "cwd"  # absolute working directory outside any git repository
    ALIAS = "alias"  # another name for the project (legacy folder name, merged project)


# The keys that say which repository a session works in; a path, cwd or alias only says where.
STRONG_KINDS = (KeyKind.REMOTE, KeyKind.ROOT_COMMIT)


class Project(models.Model):
    name = models.TextField()
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Moved by capture and writes, at most about once a minute (core.projects.project_touch).
    last_activity_at = models.DateTimeField(default=timezone.now, db_index=True)
    # Per-project settings later issues add (e.g. a recall opt-out); {} means the defaults.
    settings = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            models.CheckConstraint(condition=~Q(name=""), name="project_name_not_empty"),
            models.CheckConstraint(condition=~Q(slug=""), name="project_slug_not_empty"),
        ]

    def __str__(self) -> str:
        return self.slug


class ProjectKey(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="keys")
    kind = models.CharField(max_length=16, choices=KeyKind.choices)
    value = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project", "kind", "value"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "value"], name="project_key_unique"),
            models.CheckConstraint(condition=Q(kind__in=KeyKind.values), name="project_key_kind_valid"),
            models.CheckConstraint(condition=~Q(value=""), name="project_key_value_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.value}"
