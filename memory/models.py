"""Semantic memories, embeddings, and the answer cache ("Librarian")."""
import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import VectorField

from core.searchable import tsvector_of


class Memory(models.Model):
    """A fact the agent chose to remember (seed 003). Never deleted by an MCP tool."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    content = models.TextField()
    # SHA-256 of the normalised content (case-folded, whitespace collapsed): one row per fact and
    # project (the same fact may hold in two projects; unique per scope, see Meta).
    content_hash = models.CharField(max_length=64, editable=False)
    # None: a global memory. Defaults to the project of the conversation it came from.
    project = models.ForeignKey("core.Project", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="memories")
    tags = ArrayField(models.CharField(max_length=50), default=list, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Where the memory came from (optional, not enforced: conversations may be deleted).
    conversation_id = models.UUIDField(null=True, blank=True)
    message_id = models.UUIDField(null=True, blank=True)
    search_vector = models.GeneratedField(
        expression=tsvector_of("content"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "memories"
        constraints = [
            models.CheckConstraint(condition=~Q(content=""), name="memory_content_not_empty"),
            models.UniqueConstraint(fields=["project", "content_hash"], condition=Q(project__isnull=False),
                                    name="memory_unique_fact_in_project"),
            models.UniqueConstraint(fields=["content_hash"], condition=Q(project__isnull=True),
                                    name="memory_unique_global_fact"),
        ]
        indexes = [
            models.Index(fields=["project", "-created_at"], name="memory_project_created"),
            GinIndex(fields=["search_vector"], name="memory_search_vector"),
            GinIndex(fields=["tags"], name="memory_tags"),
            models.Index(fields=["-created_at"], name="memory_created"),
        ]

    def __str__(self) -> str:
        return self.content[:80]


class Embedding(models.Model):
    """One vector of one searchable row (any registered kind) under one model.

    The column is an untyped `vector`, so several models (of any dimension) can live side by side
    while `winni_reembed` moves search from one to the next; each (model, kind) gets its own
    partial HNSW index over `vector::halfvec(<dimensions>)` (see memory.vectors)."""

    kind = models.CharField(max_length=32)
    object_id = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    dimensions = models.PositiveSmallIntegerField()
    vector = VectorField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "object_id", "model"], name="embedding_unique_row_model"),
            models.CheckConstraint(condition=Q(dimensions__gte=1), name="embedding_dimensions_positive"),
        ]
        indexes = [models.Index(fields=["model", "kind"], name="embedding_model_kind")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.object_id} ({self.model}, {self.dimensions}-d)"


class EmbeddingModel(models.Model):
    """The models whose vectors exist. Exactly one is active: searches use only its vectors."""

    name = models.CharField(max_length=200, unique=True)
    dimensions = models.PositiveSmallIntegerField()
    provider = models.CharField(max_length=32)
    is_active = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["is_active"], condition=Q(is_active=True), name="one_active_embedding_model"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.dimensions}-d{', active' if self.is_active else ''})"

