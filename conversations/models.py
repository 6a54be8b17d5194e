import uuid

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.searchable import tsvector_of

# Where a conversation came from: its metadata.source, lower-cased; one without came in through the
# API. The admin charts and titles these.
SOURCES = ("claude-code", "api", "proxy")
DEFAULT_SOURCE = "api"
SOURCE_TITLES = {
    "claude-code": "Claude Code", "api": "API", "proxy": "MCP proxy", "mcp-proxy": "MCP proxy",
    "codex": "Codex CLI", "gemini-cli": "Gemini CLI", "copilot-cli": "Copilot CLI",
    "claude-code-transcript": "Claude Code (imported)", "codex-transcript": "Codex CLI (imported)",
    "gemini-cli-transcript": "Gemini CLI (imported)", "copilot-cli-transcript": "Copilot CLI (imported)",
}


def source_title(source: str) -> str:
    return SOURCE_TITLES.get(source, source)


# A conversation's title is its first user prompt, whitespace collapsed, at most this long.
TITLE_CHARS = 200


def prompt_title(content: str) -> str:
    return " ".join(content.split())[:TITLE_CHARS]


def _metadata_is_object(field: str) -> Q:
    """CHECK (field IS NULL OR jsonb_typeof(field) = 'object'), as in the seed schema."""
    return Q(**{f"{field}__isnull": True}) | Q(
        models.lookups.Exact(
            models.Func(models.F(field), function="jsonb_typeof", output_field=models.TextField()),
            models.Value("object"),
        )
    )


class Conversation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session_id = models.TextField(null=True, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    # The project the session worked in (None: global). PROTECT: a project goes only by a merge,
    # which moves its conversations first.
    project = models.ForeignKey("core.Project", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="conversations")
    created_at = models.DateTimeField(default=timezone.now)
    # Moved by every new message (services.message_store / messages_store_bulk).
    updated_at = models.DateTimeField(default=timezone.now)
    # Kept by the same two services from the messages themselves (a back-filled conversation's
    # activity is its messages' times, not the import's): the first user prompt (prompt_title),
    # and the earliest and latest message created_at. NULL while there is none.
    title = models.TextField(null=True, blank=True)
    first_message_at = models.DateTimeField(null=True, blank=True)
    last_message_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["session_id", "-updated_at"], name="conv_session_updated"),
            models.Index(fields=["project", "-updated_at"], name="conv_project_updated"),
            models.Index(fields=["-created_at"], name="conv_created"),
            models.Index(fields=["-updated_at"], name="conv_updated"),
            # The admin's list: latest activity first, conversations without messages last.
            models.Index(models.F("last_message_at").desc(nulls_last=True), name="conv_last_message"),
        ]
        constraints = [
            models.CheckConstraint(condition=_metadata_is_object("metadata"), name="conv_metadata_is_object"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id or 'conversation'} ({self.id})"

    @property
    def source(self) -> str:
        """metadata.source, lower-cased (DEFAULT_SOURCE when unset)."""
        metadata = self.metadata if isinstance(self.metadata, dict) else {}
        return str(metadata.get("source") or DEFAULT_SOURCE).strip().lower() or DEFAULT_SOURCE


class Role(models.TextChoices):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class Message(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    turn_number = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    metadata = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    search_vector = models.GeneratedField(
        expression=tsvector_of("content"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # Its conversation's project, copied by the database (migration 0006's triggers: set on insert
    # from the conversation, moved with it), never written by the code: searches narrow a project's
    # messages on this column and its index instead of joining every row back to its conversation
    # (1M realistic messages, hybrid dewey_search with a project: p95 ≈ 330 ms through the join).
    project = models.ForeignKey("core.Project", null=True, blank=True, editable=False, on_delete=models.DO_NOTHING,
                                db_constraint=False, db_index=False, related_name="+")

    class Meta:
        ordering = ["conversation", "turn_number"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "turn_number"], name="msg_unique_turn"),
            models.CheckConstraint(condition=Q(role__in=Role.values), name="msg_role_valid"),
            models.CheckConstraint(condition=Q(turn_number__gte=1), name="msg_turn_positive"),
            models.CheckConstraint(condition=~Q(content=""), name="msg_content_not_empty"),
            models.CheckConstraint(condition=_metadata_is_object("metadata"), name="msg_metadata_is_object"),
        ]
        indexes = [
            GinIndex(fields=["search_vector"], name="msg_search_vector"),
            models.Index(fields=["-created_at"], name="msg_created"),
            # conversation_id included: a project's messages less a session's are counted from the
            # index alone (search sizes its scope: 10,000 rows 17 → 2 ms).
            models.Index(fields=["project", "-created_at"], include=["conversation_id"], name="msg_project_created"),
        ]

    def __str__(self) -> str:
        return f"#{self.turn_number} {self.role}"


class FiedlerStatus(models.TextChoices):
    SUCCESS = "success"
    ERROR = "error"


class FiedlerResult(models.Model):
    """One model's answer in an orchestration run ("Fiedler"), grouped by correlation_id."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    correlation_id = models.CharField(max_length=255)
    model = models.CharField(max_length=200)
    # NULL when redacted (WINNI_REDACT_PROMPTS or the request's `redact`): then not indexed either.
    prompt = models.TextField(null=True, blank=True)
    output = models.TextField(blank=True)
    tokens_prompt = models.PositiveIntegerField(null=True, blank=True)
    tokens_completion = models.PositiveIntegerField(null=True, blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=FiedlerStatus.choices, default=FiedlerStatus.SUCCESS)
    error_message = models.TextField(null=True, blank=True)
    metadata = models.JSONField(null=True, blank=True)
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="fiedler_results"
    )
    created_at = models.DateTimeField(default=timezone.now)
    search_vector = models.GeneratedField(
        expression=tsvector_of("prompt", "output"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=FiedlerStatus.values), name="fiedler_status_valid"),
            models.CheckConstraint(condition=_metadata_is_object("metadata"), name="fiedler_metadata_is_object"),
            models.CheckConstraint(
                condition=Q(duration_seconds__isnull=True) | Q(duration_seconds__gte=0), name="fiedler_duration_positive"
            ),
        ]
        indexes = [
            models.Index(fields=["correlation_id"], name="fiedler_correlation"),
            models.Index(fields=["model", "-created_at"], name="fiedler_model_created"),
            models.Index(fields=["-created_at"], name="fiedler_created"),
            GinIndex(fields=["search_vector"], name="fiedler_search_vector"),
        ]

    def __str__(self) -> str:
        return f"{self.correlation_id} {self.model}"


class SessionDigest(models.Model):
    """What one session did, in a few lines (conversations/services/digest.py writes it when the
    session ends or compacts): what was asked, files touched, commands run and their outcome,
    decisions and rules stated, open questions, the last answer. A searchable kind of its own
    ("digest"): one row per conversation, rewritten as the session goes on."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.OneToOneField(Conversation, on_delete=models.CASCADE, related_name="digest")
    project = models.ForeignKey("core.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    session_id = models.TextField(null=True, blank=True)
    text = models.TextField()
    sections = models.JSONField(default=dict)  # the parts `text` is written from (asked, files, …)
    # "extractive" (offline) or the model that wrote it ("openai:gpt-4o-mini"); when an LLM is set
    # up and the offline digest stayed, `writer_note` says why (budget spent, provider failed, …).
    writer = models.CharField(max_length=240, default="extractive")
    writer_note = models.TextField(blank=True, default="")
    # Queued for the model (conversations.services.digest): these are the backlog WINNI_DIGEST_LLM_BACKLOG caps.
    awaiting_model = models.BooleanField(default=False)
    trigger = models.CharField(max_length=32, blank=True)  # the hook event that wrote it last
    messages_seen = models.PositiveIntegerField(default=0)
    # The first and last message it covers: the digest's dates.
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    search_vector = models.GeneratedField(
        expression=tsvector_of("text"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["-updated_at"]
        constraints = [models.CheckConstraint(condition=~Q(text=""), name="digest_text_not_empty")]
        indexes = [
            GinIndex(fields=["search_vector"], name="digest_search_vector"),
            models.Index(fields=["project", "-updated_at"], name="digest_project_updated"),
            models.Index(fields=["updated_at"], condition=Q(awaiting_model=True), name="digest_awaiting_model"),
        ]

    def __str__(self) -> str:
        return f"digest of session {self.session_id or self.conversation_id}"
