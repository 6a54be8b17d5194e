"""The inputs of the medallion tools and their endpoints, declared once (core.inputs):
medallion_checkpoint_session and `POST /api/v1/medallions/checkpoint/`; medallion_load_for_scope and
`GET /api/v1/medallions/`, which share what they share (as_text, project, a scope item's bound) and
differ on purpose in the rest (MCP loads a few for one scope object; REST pages through a query
string). MCP takes the scope and the evidence as typed objects (pydantic models, so the agent sees
their fields); REST takes them as JSON the service checks, documented by their fields here."""
from typing import Any, Literal, get_args

from drf_spectacular.utils import extend_schema_field
from pydantic import BaseModel, ConfigDict, Field
from rest_framework import serializers

from core.inputs import Input, Inputs
from core.rest import INT_MAX, JSON_VALUE_REF, ProjectField
from medallions import schema, services


class ScopeArg(BaseModel):
    """graph_nodes (e.g. "repo:winni") and tags."""

    model_config = ConfigDict(extra="forbid")
    graph_nodes: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)


class EvidenceArg(BaseModel):
    """A summary, transcripts (text or {role, content}), artefacts (text or {path, kind, content})
    or a stored conversation's id."""

    model_config = ConfigDict(extra="forbid")
    session_summary: str = ""
    # Each item typed (not `Any`, whose schema `{}` strict schema checks refuse: the MCP Inspector's
    # --strict complaint about this tool).
    transcripts: list[str | dict[str, Any]] = Field(default_factory=list)
    artefacts: list[str | dict[str, Any]] = Field(default_factory=list)
    conversation_id: str | None = None


# A checkpoint's scope on REST: the medallion schema's scope (the component medallions/api.py adds),
# with at least one graph node or tag (the service's rule).
@extend_schema_field({
    "allOf": [{"$ref": "#/components/schemas/MedallionScopeInput"}],
    "anyOf": [{"required": ["graph_nodes"], "properties": {"graph_nodes": {"minItems": 1}}},
              {"required": ["tags"], "properties": {"tags": {"minItems": 1}}}]})
class CheckpointScopeField(serializers.JSONField):
    """The scope as JSON: the service checks it and names the failing part."""


# EvidenceArg's fields as REST's JSON takes them (the service checks them): each may be null, and a
# transcript may also be a list of messages.
@extend_schema_field({
    "type": "object", "additionalProperties": False,
    "properties": {
        "session_summary": {"type": "string", "nullable": True},
        "transcripts": {"type": "array", "nullable": True, "items": JSON_VALUE_REF,
                        "description": "text, {role, content} messages or lists of them"},
        "artefacts": {"type": "array", "nullable": True, "items": JSON_VALUE_REF},
        "conversation_id": {"type": "string", "format": "uuid", "nullable": True,
                            "description": "a stored conversation whose messages become the transcript (404 if none)"},
    }})
class EvidenceField(serializers.JSONField):
    """The evidence as JSON: the service checks it and names the failing part."""


CHECKPOINT = Inputs(
    scope=Input(ScopeArg, field=CheckpointScopeField, help="at least one graph node or tag"),
    evidence=Input(EvidenceArg, default=None, field=EvidenceField, rest={"default": dict},
                   help="what the session produced; any of these"),
    wait_seconds=Input(int, default=0, minimum=0, maximum=services.MAX_WAIT_SECONDS,
                       help="wait up to this long for the job to finish (default 0: answer at once)"),
)

AS_TEXT = Input(bool, default=False, help="also return them as compact Markdown in `text`")
PROJECT = Input(str, default=None, field=ProjectField, help="only this project's medallions (slug or name)")

# medallion_load_for_scope: a few for the scope a session starts in.
LOAD = Inputs(
    scope=Input(ScopeArg, help="every graph node and tag must be among a medallion's (empty: any)"),
    limit=Input(int, default=3, minimum=1, maximum=20),
    as_text=AS_TEXT,
    project=PROJECT,
)


class ScopeItemField(serializers.CharField):
    """A graph node or tag in a query string: at most MAX_SCOPE_ITEM_CHARS characters."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", schema.MAX_SCOPE_ITEM_CHARS)
        super().__init__(**kwargs)


StatusFilter = Literal["active", "superseded", "archived", "any"]
STATUS_CHOICES = list(get_args(StatusFilter))

# `GET /medallions/`: a page of them, the scope as repeatable graph_nodes and tags.
LIST = Inputs(
    graph_nodes=Input(list[str], default=None, field=ScopeItemField, rest={"default": list},
                      help="repeatable; every one must be among a medallion's nodes"),
    tags=Input(list[str], default=None, field=ScopeItemField, rest={"default": list},
               help="repeatable; every one must be among a medallion's tags"),
    status=Input(StatusFilter, default="active", help="default active; any: every status"),
    limit=LOAD["limit"].but(default=20, maximum=100),
    offset=Input(int, default=0, minimum=0, maximum=INT_MAX),
    as_text=AS_TEXT,
    project=PROJECT,
)
