"""The adaptive answer cache ("Librarian", seed 002 §3): one row per normalised query, plus hourly
counters of asks and hits so the hit rate can be charted over time. The tables were created by
the memory app (memory/migrations/0003_librarian.py) and keep their names (db_table)."""
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

# The local all-MiniLM-L6-v2 vectors; the model name is stored beside each vector and only vectors
# of the current model are compared.
QUERY_EMBEDDING_DIMENSIONS = 384


class Tier(models.TextChoices):
    COLD = "cold"
    WARM = "warm"
    HOT = "hot"
    CORE = "core"


# Promotion order (lowest first); eviction takes the lowest tier first.
TIER_ORDER = [Tier.COLD, Tier.WARM, Tier.HOT, Tier.CORE]


class QueryMemory(models.Model):
    # Identity: one entry per normalised query and project (unique per scope, see Meta)
    query_hash = models.CharField(max_length=64)  # SHA-256 of the normalised query
    query_text = models.TextField()  # the question as first asked
    # The project the question was asked in (its answer came from that project's rows); None: a
    # global entry. A project's ask looks at its own entries first, then the global ones.
    project = models.ForeignKey("core.Project", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="cache_entries")
    embedding = VectorField(dimensions=QUERY_EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True, default="")

    # Cached response (NULL while the entry is only tracked, or after eviction / expiry)
    answer = models.TextField(null=True, blank=True)
    answer_version = models.PositiveIntegerField(default=1)
    sources = models.JSONField(default=list, blank=True)

    # Statistics
    ask_count = models.PositiveIntegerField(default=1)
    first_asked = models.DateTimeField(default=timezone.now)
    last_asked = models.DateTimeField(default=timezone.now)

    # Performance
    compute_time_ms = models.PositiveIntegerField(null=True, blank=True)
    cache_hits = models.PositiveIntegerField(default=0)

    # Quality
    confidence = models.FloatField(null=True, blank=True)
    feedback_positive = models.PositiveIntegerField(default=0)
    feedback_negative = models.PositiveIntegerField(default=0)

    # Cache management
    tier = models.CharField(max_length=8, choices=Tier.choices, default=Tier.COLD)
    pinned = models.BooleanField(default=False)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_querymemory"
        verbose_name = "cached query"
        verbose_name_plural = "answer cache"
        indexes = [
            models.Index(fields=["tier"], name="qm_tier"),
            models.Index(fields=["-ask_count"], name="qm_ask_count"),
            models.Index(fields=["-last_asked"], name="qm_last_asked"),
            # Eviction scans cached, unpinned rows by tier then age.
            models.Index(
                fields=["tier", "last_asked"], name="qm_evictable",
                condition=Q(answer__isnull=False, pinned=False),
            ),
            # L2 only ever looks at rows with an answer.
            HnswIndex(
                name="qm_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                opclasses=["vector_cosine_ops"], condition=Q(answer__isnull=False),
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["project", "query_hash"], condition=Q(project__isnull=False),
                                    name="qm_unique_query_in_project"),
            models.UniqueConstraint(fields=["query_hash"], condition=Q(project__isnull=True),
                                    name="qm_unique_global_query"),
            models.CheckConstraint(condition=Q(tier__in=Tier.values), name="qm_tier_valid"),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | Q(confidence__gte=0, confidence__lte=1),
                name="qm_confidence_range",
            ),
        ]

    def __str__(self) -> str:
        return self.query_text[:80]

    @property
    def is_cached(self) -> bool:
        return self.answer is not None and not self.is_expired

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()


class LibrarianHourlyStats(models.Model):
    """Counters per hour (UTC): asks and how they were answered. Written with one upsert per ask."""

    hour = models.DateTimeField(unique=True)
    asks = models.PositiveIntegerField(default=0)
    exact_hits = models.PositiveIntegerField(default=0)
    semantic_hits = models.PositiveIntegerField(default=0)
    misses = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "memory_librarianhourlystats"
        verbose_name = "answer cache hourly stats"
        verbose_name_plural = "answer cache hourly stats"
        ordering = ["-hour"]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}:00 ({self.asks} asks)"
