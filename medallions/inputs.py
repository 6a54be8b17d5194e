"""The inputs medallion_checkpoint_session shares with `POST /api/v1/medallions/checkpoint/`, declared
once (core.inputs). MCP takes the scope and the evidence as typed objects (pydantic models, so the
agent sees their fields); REST takes them as JSON the service checks and documents them in the
checkpoint's request schema (medallions/api.py)."""
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from rest_framework import serializers

from core.inputs import Input, Inputs
from medallions import services


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


CHECKPOINT = Inputs(
    scope=Input(ScopeArg, field=serializers.JSONField),
    evidence=Input(EvidenceArg, default=None, field=serializers.JSONField, rest={"default": dict}),
    wait_seconds=Input(int, default=0, minimum=0, maximum=services.MAX_WAIT_SECONDS),
)
