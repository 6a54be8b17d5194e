"""Medallions (SPEC §6): structured checkpoints of a scope, their revisions, and checkpoint jobs.

The scope's graph nodes and tags are PostgreSQL arrays with GIN indexes, so "requested ⊆ stored"
is an indexed `@>`; the sections are JSONB validated against medallions.schema on every write."""
from __future__ import annotations

import uuid
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.searchable import tsvector_of


class Status(models.TextChoices):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"


def _empty_affordances() -> dict[str, list[str]]:
    return {"recommended_entry_points": [], "avoid_repeating": [], "invariants": []}


def _empty_summary() -> dict[str, Any]:
    return {"high_level": "", "subsystems": []}


class MedallionQuerySet(models.QuerySet["Medallion"]):
    def for_scope(self, *, graph_nodes: list[str], tags: list[str]) -> "MedallionQuerySet":
        """Subset semantics: requested nodes ⊆ stored nodes and requested tags ⊆ stored tags; an
        empty requested list matches every medallion on that axis."""
        qs = self
        if graph_nodes:
            qs = qs.filter(graph_nodes__contains=graph_nodes)
        if tags:
            qs = qs.filter(tags__contains=tags)
        return qs

    def exact_scope(self, *, graph_nodes: list[str], tags: list[str]) -> "MedallionQuerySet":
        """The same sets of nodes and tags (order and repeats ignored)."""
        return self.filter(
            graph_nodes__contains=graph_nodes, graph_nodes__contained_by=graph_nodes,
            tags__contains=tags, tags__contained_by=tags,
        )


class Medallion(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    schema_version = models.CharField(max_length=20)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    graph_nodes = ArrayField(models.TextField(), default=list, blank=True)
    tags = ArrayField(models.TextField(), default=list, blank=True)
    # The project its scope names (`repo:<slug, name or alias>` as a tag or graph node), set by
    # every write; None: the scope names no project (a global medallion).
    project = models.ForeignKey("core.Project", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="medallions")
    summary = models.JSONField(default=_empty_summary)
    decisions = models.JSONField(default=list, blank=True)
    open_questions = models.JSONField(default=list, blank=True)
    affordances = models.JSONField(default=_empty_affordances)
    model_info = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # Summary, decisions and questions as plain text (written by the service on every save): what
    # full-text search indexes and the embedding pipeline embeds.
    search_text = models.TextField(default="", blank=True, editable=False)
    search_vector = models.GeneratedField(
        expression=tsvector_of("search_text"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    objects = MedallionQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at"]
        indexes = [
            GinIndex(fields=["graph_nodes"], name="medallion_graph_nodes"),
            GinIndex(fields=["tags"], name="medallion_tags"),
            GinIndex(fields=["search_vector"], name="medallion_search_vector"),
            models.Index(fields=["status", "-updated_at"], name="medallion_status_updated"),
            models.Index(fields=["project", "status", "-updated_at"], name="medallion_project_updated"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=Status.values), name="medallion_status_valid"),
        ]

    def __str__(self) -> str:
        return ", ".join([*self.graph_nodes, *(f"#{tag}" for tag in self.tags)]) or str(self.id)

    def document(self) -> dict[str, Any]:
        """The medallion as the schema's JSON document."""
        return {
            "meta": {
                "id": str(self.id),
                "schema_version": self.schema_version,
                "created_at": self.created_at.isoformat(),
                "updated_at": self.updated_at.isoformat(),
                "status": self.status,
                "model_info": self.model_info or {"provider": "", "model": ""},
            },
            "scope": {"graph_nodes": list(self.graph_nodes), "tags": list(self.tags)},
            "summary": self.summary,
            "decisions": self.decisions,
            "open_questions": self.open_questions,
            "affordances": self.affordances,
        }


class MedallionRevision(models.Model):
    """The previous version of a medallion, kept by every update: who, when, which job."""

    medallion = models.ForeignKey(Medallion, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    document = models.JSONField()
    actor = models.CharField(max_length=200, blank=True, default="")
    operation = models.CharField(max_length=40, default="update")
    job = models.ForeignKey("MedallionJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["medallion", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["medallion", "number"], name="medallion_revision_unique_number"),
        ]

    def __str__(self) -> str:
        return f"revision {self.number} of {self.medallion_id}"


class JobStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class MedallionJob(models.Model):
    """One checkpoint_session run in the worker: its inputs, progress and outcome."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.PENDING)
    operation = models.CharField(max_length=16, blank=True, default="")  # generate | update, once known
    graph_nodes = ArrayField(models.TextField(), default=list, blank=True)
    tags = ArrayField(models.TextField(), default=list, blank=True)
    evidence = models.JSONField(default=dict, blank=True)
    actor = models.CharField(max_length=200, blank=True, default="")
    provider = models.CharField(max_length=100, blank=True, default="")
    medallion = models.ForeignKey(Medallion, null=True, blank=True, on_delete=models.SET_NULL, related_name="jobs")
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When a failure was told to the user (once, at the next start of a session of its project).
    failure_told_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "-created_at"], name="medallion_job_status")]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=JobStatus.values), name="medallion_job_status_valid"),
        ]

    def __str__(self) -> str:
        return f"job {self.id} ({self.status})"

    @property
    def scope(self) -> dict[str, list[str]]:
        return {"graph_nodes": list(self.graph_nodes), "tags": list(self.tags)}
