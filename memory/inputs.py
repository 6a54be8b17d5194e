"""The inputs of the memory app's tools and their endpoints, declared once (core.inputs): MCP's
store_memory, search_memory and update_memory, REST's `/api/v1/memories/...`."""
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.inputs import AS_OF, PROJECT_ONLY, RECENCY, Input, Inputs, Shape
from core.rest import (
    WHITE_SPACE,
    DateBoundField,
    JsonObjectField,
    NonBlankField,
    ProjectField,
    SearchQueryField,
    UuidTextField,
)
from memory import services

# A tag is 1-50 characters once trimmed (the service trims and lower-cases it).
TAG_PATTERN = f"^[{WHITE_SPACE}]*[^{WHITE_SPACE}\\u0000]([^\\u0000]{{0,48}}[^{WHITE_SPACE}\\u0000])?[{WHITE_SPACE}]*$"


@extend_schema_field({"type": "string", "pattern": TAG_PATTERN})
class TagField(serializers.CharField):
    """One tag; the service trims it, lower-cases it and checks its length (naming the field)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, error_messages={"blank": services.TAG_INVALID}, **kwargs)


def tags(help: str) -> Input:
    """A list of tags: at most MAX_TAGS, each checked by the service."""
    return Input(list[str], default=None, field=TagField, max_length=services.MAX_TAGS, help=help)


STORE = Inputs(
    content=Input(str, field=NonBlankField, help="the fact, preference or decision (at most WINNI_MAX_CONTENT_BYTES)"),
    tags=tags("up to 10 tags, each 1-50 characters (stored trimmed, lower case)"),
    metadata=Input(dict[str, Any], default=None, field=JsonObjectField),
    conversation_id=Input(str, default=None, field=UuidTextField, help="the conversation it came from (404 if none)"),
    message_id=Input(str, default=None, field=UuidTextField, help="the message it came from (404 if none)"),
    project=Input(str, default=None, field=ProjectField, rest={"allow_blank": True},
                  help="an existing project's slug or name (404 if none); omitted: the conversation's project, else "
                       "a global memory"),
    supersedes=Input(list[str], default=None, field=UuidTextField,
                     help="ids of memories this one replaces (they leave search)"),
)

# An update gives content or tags (the service refuses neither: UPDATE_NOTHING).
UPDATE = Inputs(
    memory_id=Input(str),  # MCP only: REST has it in the path
    content=Input(str, default=None, field=NonBlankField, help="the new text"),
    tags=tags("the new tags (replace the old ones)"),
    reason=Input(str, default=None, max_length=services.REASON_MAX_CHARS, rest={"allow_blank": True},
                 help="why it changed"),
).any_of(Shape(given=("content",)), Shape(given=("tags",)))

SEARCH = Inputs(
    query=Input(str, field=SearchQueryField,
                help="what to look for, in plain words (at most 10,000 characters, 413 beyond)"),
    limit=Input(int, default=5, minimum=1, maximum=20, help="1-20 (default 5)"),
    tags=tags("only memories carrying all of these"),
    project=Input(str, default=None, field=ProjectField, help="this project's memories and the global ones (no project)"),
    start_date=Input(str, default=None, field=DateBoundField, help="ISO 8601 date or date-time"),
    end_date=Input(str, default=None, field=DateBoundField, help="ISO 8601 date or date-time, inclusive"),
    include_superseded=Input(bool, default=False, help="also memories a newer one superseded"),
    as_of=AS_OF,
    recency=RECENCY,
    project_only=PROJECT_ONLY,
)
