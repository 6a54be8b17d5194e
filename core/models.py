"""Projects: the scope every store's rows belong to (nullable everywhere: no project = global).

A project has a display name, a unique slug (what interfaces and scope tags use: `repo:<slug>`)
and identity keys. A key is what a session can tell about where it runs (a normalised git remote,
the repository's root commit, the git root's path, a working directory) or an alias (an earlier
name: a legacy folder name, a merged project's slug). One key belongs to one project
(unique (kind, value)); core.projects resolves a session's keys to its project."""
from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
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


class FileChange(models.TextChoices):
    SEEN = "seen"  # read or named by a tool call, never changed since Winni knows it
    EDIT = "edit"  # Edit, MultiEdit, NotebookEdit, a patch
    WRITE = "write"  # Write: created or rewritten whole
    DELETE = "delete"  # rm, git rm, a patch's Delete File
    RENAME = "rename"  # mv, git mv, a patch's Move to (renamed_to says where)


class ProjectFile(models.Model):
    """A file of a project as captured tool calls show it: its latest change only (a file edited a
    thousand times is one row, so an item about it gets one mark, the latest change). core.anchors
    writes it from every captured tool call that changes a file."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="files")
    path = models.TextField()  # core.paths.project_path: relative to the project's root
    # Its last part: an item naming a file by its name or the end of its path finds it by this.
    name = models.TextField()
    change = models.CharField(max_length=8, choices=FileChange.choices, default=FileChange.SEEN)
    changed_at = models.DateTimeField(null=True, blank=True)  # None: seen, never changed
    session_id = models.TextField(blank=True, default="")  # the session of the latest change
    renamed_to = models.TextField(blank=True, default="")
    # SHA-256 of the content after the latest change, when Winni could read the file; "" when not.
    content_hash = models.CharField(max_length=64, blank=True, default="")
    changes = models.PositiveIntegerField(default=0)  # how many changes Winni captured in all
    # The commit of the latest change when it was seen in the repository's history at SessionStart
    # (the hook's `git diff` since the commit Winni last saw), not in a captured tool call; "" else.
    commit = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "path"], name="project_file_unique"),
            models.CheckConstraint(condition=~Q(path=""), name="project_file_path_not_empty"),
        ]
        indexes = [models.Index(fields=["project", "name"], name="project_file_name")]

    def __str__(self) -> str:
        return self.path


class Anchor(models.Model):
    """What an item (a memory, a medallion decision, a turn, a digest: any "<kind>:<id>") knew of a
    file it names when it was written: the file's content hash when Winni could read it, else the
    time and session of the file's last captured change. A later change makes the item possibly
    stale (core.anchors.marks) until someone confirms it still holds (confirmed_at)."""

    item_key = models.TextField(db_index=True)  # "<kind>:<id>", as automatic recall names items
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="anchors")
    path = models.TextField()  # project-relative; a bare file name when the item named only that
    text_hash = models.CharField(max_length=16)  # the item's text when anchored: a new text re-anchors
    anchored_at = models.DateTimeField()
    content_hash = models.CharField(max_length=64, blank=True, default="")
    last_change_at = models.DateTimeField(null=True, blank=True)
    last_change_session = models.TextField(blank=True, default="")
    # The item's own session (a turn's; "" otherwise): its later edits of the file are its work, not
    # a change since (core.anchors._mark).
    session_id = models.TextField(blank=True, default="")
    confirmed_at = models.DateTimeField(null=True, blank=True)
    confirmed_by = models.TextField(blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item_key", "path"], name="anchor_unique"),
            models.CheckConstraint(condition=~Q(path=""), name="anchor_path_not_empty"),
        ]
        indexes = [models.Index(fields=["project", "path"], name="anchor_project_path")]

    def __str__(self) -> str:
        return f"{self.item_key} → {self.path}"


class ItemUse(models.Model):
    """Whether the agent used one item automatic recall injected (an Injection's item, "<kind>:<id>"):
    judged once the turn that followed is over (winni_site.injection_use). Its own table beside the
    injections', keyed by the injection's id, so judging never rewrites what was injected."""

    injection_id = models.BigIntegerField(db_index=True)
    item_key = models.TextField()
    kind = models.CharField(max_length=40)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="item_uses")
    used = models.BooleanField()
    # What showed the use ("fetched it by id", "edited src/invoice.py", "repeated `RATE_BASIS_POINTS`"); "" when ignored.
    evidence = models.TextField(blank=True, default="")
    judged_at = models.DateTimeField(default=timezone.now)
    # The specific words of the prompt it was injected for (the injection's gate terms): the use
    # prior counts only judgments made for prompts like the one at hand (agents.use.prior_for).
    terms = ArrayField(models.TextField(), default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["injection_id", "item_key"], name="item_use_unique")]
        indexes = [models.Index(fields=["kind", "used"], name="item_use_kind"),
                   # The use prior's one read per recall: the judgments of the candidates' items.
                   models.Index(fields=["item_key", "-judged_at"], name="item_use_key")]

    def __str__(self) -> str:
        return f"{self.item_key} {'used' if self.used else 'ignored'}"


class LLMCall(models.Model):
    """One call Winni made to the configured chat model (core.llm.ChatClient.chat writes every row):
    what it was for, its tokens (the provider's usage fields; estimated from characters when the
    provider sends none) and their estimated cost. The daily token budget is the sum of today's
    rows. A row is written before the call as "pending" with what the call may use at most (its
    prompt's estimate and its output limit), so concurrent calls see each other's share; the call's
    end replaces that with what it used."""

    class Outcome(models.TextChoices):
        PENDING = "pending"
        OK = "ok"
        ERROR = "error"

    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    purpose = models.CharField(max_length=32)  # digest, medallion, judgment
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # True when the provider reported no usage and the tokens are estimated from characters.
    tokens_estimated = models.BooleanField(default=False)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.PENDING)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-started_at"]
        verbose_name = "LLM call"

    def __str__(self) -> str:
        return f"{self.purpose} {self.provider}:{self.model} {self.outcome}"
