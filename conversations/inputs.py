"""The inputs of the conversations app's tools and their endpoints (dewey_*, `/api/v1/conversations/...`,
`/api/v1/messages/search/`, `/api/v1/fiedler-results/`), declared once (core.inputs). A bulk store's
messages are a typed object on MCP (BulkMessage: the agent sees its fields) and JSON on REST, which
the service checks message by message (BulkMessagesField)."""
from typing import Any, Literal, get_args

from drf_spectacular.utils import extend_schema_field
from pydantic import BaseModel, ConfigDict, Field
from rest_framework import serializers

from conversations.services.messages import MAX_BULK_MESSAGES, READ_MAX_CHARS, READ_MAX_CHARS_RANGE
from core.inputs import AS_OF, FORCE, RECENCY, Input, Inputs, Shape
from core.rest import INT_MAX, DateBoundField, JsonObjectField, NonBlankField, ProjectField, UuidTextField

RoleName = Literal["user", "assistant", "system", "tool"]
StatusName = Literal["success", "error"]
SortBy = Literal["created_at", "updated_at"]
ROLE_CHOICES = list(get_args(RoleName))

LIMIT = Input(int, default=20, minimum=1, maximum=100, help="page size, 1-100 (default 20)")
# PostgreSQL's integer range bounds an offset or a count on REST (MCP's service checks it).
OFFSET = Input(int, default=0, minimum=0, rest={"max_value": INT_MAX}, help="rows to skip (default 0)")
COUNT = Input(int, default=None, minimum=0, rest={"max_value": INT_MAX})
SESSION_ID = Input(str, default=None, max_length=500)
METADATA = Input(dict[str, Any], default=None, field=JsonObjectField)
START_DATE = Input(str, default=None, field=DateBoundField, help="ISO 8601 date or date-time, inclusive")
END_DATE = Input(str, default=None, field=DateBoundField, help="ISO 8601 date (the whole day) or date-time, inclusive")
PROJECT_FILTER = Input(str, default=None, field=ProjectField, help="only this project's (slug or name)")


def max_chars(what: str) -> Input:
    low, high = READ_MAX_CHARS_RANGE
    return Input(int, default=READ_MAX_CHARS, rest={"min_value": low, "max_value": high},
                 help=f"{what} at most, in characters (default {READ_MAX_CHARS:,}): the messages' texts are cut to fit")


BEGIN = Inputs(
    session_id=SESSION_ID.but(rest={"allow_blank": True}, help="the client's session id (Claude Code's)"),
    metadata=METADATA.but(help="any JSON object"),
    project=Input(str, default=None, field=ProjectField, rest={"allow_blank": True},
                  help="an existing project's slug or name (404 if none)"),
)

STORE_MESSAGE = Inputs(
    conversation_id=Input(str),  # MCP only: REST has it in the path
    role=Input(RoleName),
    content=Input(str, field=NonBlankField,
                  help="the message text (at most WINNI_MAX_CONTENT_BYTES of UTF-8, 413 beyond)"),
    turn_number=Input(int, default=None, minimum=1, rest={"max_value": INT_MAX},
                      help="omitted: the next turn; an existing one is a 409"),
    metadata=METADATA,
    created_at=Input(str, default=None, field=DateBoundField, help="ISO 8601 (default: now)"),
)

DELETE = Inputs(
    conversation_id=Input(str),  # MCP only: REST has it in the path
    force=FORCE,
)

GET_CONVERSATION = Inputs(
    conversation_id=Input(str),  # MCP only: REST has it in the path
    turn_from=Input(int, default=None, rest={"min_value": 1, "max_value": INT_MAX}, help="the first turn (included)"),
    turn_to=Input(int, default=None, rest={"min_value": 1, "max_value": INT_MAX}, help="the last turn (included)"),
    max_chars=max_chars("the conversation's JSON"),
)

LIST_CONVERSATIONS = Inputs(
    session_id=SESSION_ID.but(help="only this session's conversations"),
    limit=LIMIT,
    offset=OFFSET,
    sort_by=Input(SortBy, default="updated_at", help="newest first by this time (default updated_at)"),
    project=PROJECT_FILTER,
)

SEARCH = Inputs(
    query=Input(str, field=NonBlankField, max_length=1000,
                help="web-search syntax: words, \"a phrase\", -excluded, or"),
    session_id=SESSION_ID,
    conversation_id=Input(str, default=None, field=UuidTextField),
    role=Input(RoleName, default=None),
    start_date=START_DATE,
    end_date=END_DATE,
    limit=LIMIT,
    offset=OFFSET,
    context_lines=Input(int, default=2, minimum=0, maximum=10, help="messages before and after each hit (default 2)"),
    # None: WINNI_SEARCH_DEFAULT_MODE (the service reads it).
    mode=Input(Literal["fts", "semantic", "hybrid"], default=None, rest={"default": None},
               help="default: WINNI_SEARCH_DEFAULT_MODE"),
    project=PROJECT_FILTER,
    as_of=AS_OF,
    recency=RECENCY,
    max_chars=max_chars("the page's JSON"),
)

STORE_FIEDLER_RESULT = Inputs(
    correlation_id=Input(str, field=NonBlankField, max_length=255, help="groups the results of one fan-out"),
    model=Input(str, field=NonBlankField, max_length=200),
    output=Input(str, rest={"allow_blank": True}),
    prompt=Input(str, default=None, rest={"allow_blank": True},
                 help="stored as null when redacted (redact, or WINNI_REDACT_PROMPTS)"),
    tokens_prompt=COUNT,
    tokens_completion=COUNT,
    duration_seconds=Input(float, default=None, minimum=0),
    status=Input(StatusName, default="success"),
    error_message=Input(str, default=None, rest={"allow_blank": True}),
    metadata=METADATA,
    conversation_id=Input(str, default=None, field=UuidTextField, help="an existing conversation (404 if none)"),
    redact=Input(bool, default=False, help="store this one's prompt as null"),
)

# dewey_get_fiedler_results; REST has it in the path (`GET /fiedler-results/{correlation_id}/`).
GET_FIEDLER_RESULTS = Inputs(correlation_id=STORE_FIEDLER_RESULT["correlation_id"])

QUERY_FIEDLER_RESULTS = Inputs(
    model=Input(str, default=None, max_length=200),
    status=Input(StatusName, default=None),
    correlation_id=Input(str, default=None, max_length=255),  # REST only
    text=Input(str, default=None, field=NonBlankField, max_length=1000, help="full-text search of prompt and output"),
    start_date=START_DATE,
    end_date=END_DATE,
    limit=LIMIT,
    offset=OFFSET,
    project=PROJECT_FILTER,
)


class BulkMessage(BaseModel):
    """One message of a bulk store; its turn follows the array order."""

    model_config = ConfigDict(extra="forbid")
    role: RoleName
    content: str
    metadata: dict[str, Any] | None = None
    created_at: str | None = Field(default=None, description="ISO 8601; defaults to now (set it when importing)")


BULK_MESSAGE_SCHEMA = {
    "type": "object",
    "required": ["role", "content"],
    "additionalProperties": False,
    "properties": {
        "role": {"type": "string", "enum": ROLE_CHOICES},
        "content": {"type": "string", "pattern": NonBlankField.PATTERN},
        "metadata": {**JsonObjectField.SCHEMA, "nullable": True},
        "created_at": {"anyOf": [*DateBoundField.SCHEMA["anyOf"], {"type": "string", "maxLength": 0}], "nullable": True},
    },
}


BULK_MESSAGES_SCHEMA = {"type": "array", "items": BULK_MESSAGE_SCHEMA, "minItems": 1, "maxItems": MAX_BULK_MESSAGES,
                        "description": f"1-{MAX_BULK_MESSAGES} messages; turn numbers follow the array order"}


@extend_schema_field(BULK_MESSAGES_SCHEMA)
class BulkMessagesField(serializers.ListField):
    """The messages as JSON: the service checks each and names the failing one (messages[3].role)."""

    child = serializers.JSONField()


# Two shapes (the service refuses the others): into a new conversation (session_id, metadata and
# project describe it), or into an existing one (conversation_id, and nothing about the conversation).
NEW_CONVERSATION_ONLY = ("session_id", "metadata", "project")
STORE_MESSAGES_BULK = Inputs(
    messages=Input(list[BulkMessage], field=BulkMessagesField,
                   help=f"1-{MAX_BULK_MESSAGES} messages; turn numbers follow the array order"),
    conversation_id=Input(str, default=None, field=UuidTextField,
                          help="an existing conversation; omitted: a new one is created"),
    session_id=SESSION_ID.but(rest={"allow_blank": True}, help="for a new conversation only"),
    metadata=METADATA.but(help="for a new conversation only"),
    project=Input(str, default=None, field=ProjectField, rest={"allow_blank": True},
                  help="for a new conversation only: an existing project's slug or name (404 if none)"),
).one_of(Shape("into a new conversation", left_out=("conversation_id",)),
         Shape("into an existing conversation", given=("conversation_id",), left_out=NEW_CONVERSATION_ONLY))
