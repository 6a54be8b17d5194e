from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone


class Injection(models.Model):
    """What automatic recall added to one prompt (or file touch) of a client session: the block and
    the items it cites (agents.autorecall). A session's injections that are not reset keep the
    same item from being injected twice; a SessionStart with source compact or clear resets them
    (the model's context no longer holds what they added)."""

    class Trigger(models.TextChoices):
        PROMPT = "prompt"
        FILE = "file"
        CALL = "call"  # asked through MCP winni_context or REST /api/v1/recall/context

    session_id = models.TextField()
    trigger = models.CharField(max_length=8, choices=Trigger.choices, default=Trigger.PROMPT)
    project = models.ForeignKey("core.Project", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="injections")
    # The prompt's captured message (UserPromptSubmit) or the tool call's (PostToolUse).
    message = models.ForeignKey("conversations.Message", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="injections")
    file_path = models.TextField(blank=True, default="")
    text = models.TextField()
    items = models.JSONField(default=list)  # [{"kind", "id", "score", "source"}]
    item_keys = ArrayField(models.TextField(), default=list)  # "<kind>:<id>" of each item
    gate = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    reset_at = models.DateTimeField(null=True, blank=True)
    # False when the hook gave up waiting for the answer that carried the block: the agent never
    # read it (its items may be given again; the admin and the dashboard do not count it).
    delivered = models.BooleanField(default=True)
    undelivered_reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["session_id", "reset_at"], name="injection_session"),
            models.Index(fields=["-created_at"], name="injection_created"),
        ]
        constraints = [
            models.CheckConstraint(condition=models.Q(trigger__in=["prompt", "file", "call"]),
                                   name="injection_trigger_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.trigger} injection in {self.session_id} ({len(self.item_keys)} items)"
