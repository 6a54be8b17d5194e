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


class MemoryQuerySet(models.QuerySet["Memory"]):
    def current(self) -> "MemoryQuerySet":
        """The memories no other memory supersedes: what search and recall show by default."""
        return self.filter(superseded_by__isnull=True)


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
    # Versions (update_memory): the current text is version `version`; earlier ones are
    # MemoryVersion rows. updated_*: when, by whom and why the current version was written
    # (empty until the first update: version 1 is the stored memory itself).
    version = models.PositiveIntegerField(default=1)
    updated_at = models.DateTimeField(null=True, blank=True)
    updated_by = models.CharField(max_length=200, blank=True, default="")
    update_reason = models.TextField(blank=True, default="")
    # Supersession (store_memory(supersedes=[...])): a newer memory replaced this fact. Kept, never
    # deleted, but left out of search and recall unless include_superseded.
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="supersedes")
    superseded_at = models.DateTimeField(null=True, blank=True)
    search_vector = models.GeneratedField(
        expression=tsvector_of("content"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    objects = MemoryQuerySet.as_manager()

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


class MemoryVersion(models.Model):
    """An earlier text of a memory, kept by every update that changed it: what it said, when, by
    whom and why it was written, and when and by whom it was replaced."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    content = models.TextField()
    tags = ArrayField(models.CharField(max_length=50), default=list, blank=True)
    written_at = models.DateTimeField()
    written_by = models.CharField(max_length=200, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    replaced_at = models.DateTimeField(default=timezone.now)
    replaced_by = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["memory", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["memory", "version"], name="memory_version_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.memory_id} v{self.version}"


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
    # The project of the row (its kind's Searchable.project_column), copied when the vector is stored
    # and moved with the row by the database (migration 0011's triggers), so that a project's vector
    # search keeps its rows while it walks the HNSW index instead of checking each one against the
    # row's table. Not a foreign key: the row's own column is the truth, this is its copy.
    project_id = models.BigIntegerField(null=True, blank=True)
    # 0: the row's own vector; n ≥ 1: its passage n, for a long row (core.searchable.Searchable.passages).
    # A row's similarity is its best vector's (memory.vectors.nearest).
    # A database default too: a process of the previous release, still writing during an upgrade,
    # stores its vectors as passage 0.
    passage = models.PositiveSmallIntegerField(default=0, db_default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["kind", "object_id", "model", "passage"],
                                    name="embedding_unique_row_model_passage"),
            models.CheckConstraint(condition=Q(dimensions__gte=1), name="embedding_dimensions_positive"),
        ]
        indexes = [
            models.Index(fields=["model", "kind"], name="embedding_model_kind"),
            models.Index(fields=["model", "kind", "project_id"], name="embedding_model_kind_project"),
            # Memories' vectors in an index of their own: a project's memories with the global ones
            # (10,500 of 100,000) are ranked exactly by reading its entries in order
            # (memory.vectors._nearest), not one table page per vector: 17 → 8 ms. ≈ 2.7 KB per
            # vector, so not for messages, whose exact path reads fewer rows than its walk would.
            models.Index(fields=["model", "project_id"], include=["object_id", "vector"],
                         condition=models.Q(kind="memory"), name="embedding_memory_vectors"),
        ]

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

