"""The medallion schema (SPEC §6, seed 004 FR-001): the one definition every write is validated
against. It is exported as JSON Schema at /api/v1/medallions/schema and bundled with the
framework-agnostic client (winni_client/medallion.schema.json, kept equal by a test).

Only rules JSON Schema can express are used here, so the client's small validator enforces exactly
the same schema as the server."""
from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

SCHEMA_VERSION = "1.0"

Status = Literal["active", "superseded", "archived"]
SubsystemStatus = Literal["unknown", "planned", "in_progress", "stable", "broken", "deprecated"]
DecisionStatus = Literal["active", "proposed", "superseded", "rejected"]
Priority = Literal["low", "medium", "high"]

# Bounds keep one medallion a readable page, whatever a model produces.
MAX_SCOPE_ITEMS = 50
MAX_SCOPE_ITEM_CHARS = 200
MAX_TEXT_CHARS = 4000
MAX_LINE_CHARS = 1000
MAX_ID_CHARS = 40
MAX_LIST_ITEMS = 100

ScopeItem = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SCOPE_ITEM_CHARS)]
Line = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LINE_CHARS)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelInfo(Strict):
    provider: str = Field(default="", max_length=100)
    model: str = Field(default="", max_length=200)


class Meta(Strict):
    id: str = Field(min_length=1, max_length=64)
    schema_version: str = Field(min_length=1, max_length=20)
    created_at: dt.datetime
    updated_at: dt.datetime
    status: Status
    model_info: ModelInfo = Field(default_factory=ModelInfo)


class Scope(Strict):
    graph_nodes: list[ScopeItem] = Field(default_factory=list, max_length=MAX_SCOPE_ITEMS)
    tags: list[ScopeItem] = Field(default_factory=list, max_length=MAX_SCOPE_ITEMS)


class Subsystem(Strict):
    name: str = Field(min_length=1, max_length=200)
    status: SubsystemStatus = "unknown"
    notes: str = Field(default="", max_length=MAX_LINE_CHARS)


class Summary(Strict):
    high_level: str = Field(default="", max_length=MAX_TEXT_CHARS)
    subsystems: list[Subsystem] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


class Decision(Strict):
    id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    statement: str = Field(min_length=1, max_length=MAX_LINE_CHARS)
    rationale: str = Field(default="", max_length=MAX_LINE_CHARS)
    confidence: float = Field(ge=0, le=1, strict=True)
    status: DecisionStatus = "active"


class OpenQuestion(Strict):
    id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    question: str = Field(min_length=1, max_length=MAX_LINE_CHARS)
    blocked_on: str = Field(default="", max_length=MAX_LINE_CHARS)
    priority: Priority = "medium"


class Affordances(Strict):
    recommended_entry_points: list[Line] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    avoid_repeating: list[Line] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    invariants: list[Line] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)


class Content(Strict):
    """What an LLM writes: everything but `meta` and `scope`, which the server owns."""

    summary: Summary
    decisions: list[Decision] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    open_questions: list[OpenQuestion] = Field(default_factory=list, max_length=MAX_LIST_ITEMS)
    affordances: Affordances = Field(default_factory=Affordances)


class Medallion(Content):
    meta: Meta
    scope: Scope


def json_path(location: tuple[int | str, ...]) -> str:
    """('decisions', 0, 'confidence') -> 'decisions[0].confidence'"""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(root)"


def error_list(exc: ValidationError) -> list[tuple[str, str]]:
    """(JSON path, message) for every problem, in pydantic's order."""
    return [(json_path(tuple(err["loc"])), err["msg"]) for err in exc.errors(include_url=False)]


def json_schema(model: type[BaseModel] = Medallion) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    if model is Medallion:
        schema["$id"] = f"https://winni.local/schemas/medallion-{SCHEMA_VERSION}.json"
    return schema


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
