"""Conversations: the business rules every interface (MCP, REST, admin, tasks) calls."""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from conversations.models import Conversation, Message, Role
from winni_site.errors import Conflict, InvalidInput, NotFound
from winni_site.limits import check_content_size
from winni_site.logs import storage_op
from winni_site.searchable import announce_changed

ROLE_INVALID = "role must be one of user, assistant, system, tool"
CONTENT_EMPTY = "content must not be empty or whitespace"
METADATA_NOT_OBJECT = "metadata must be a JSON object or null"
TURN_INVALID = "turn_number must be an integer of at least 1"


# --- validation shared by every write -------------------------------------------------------


def parse_uuid(value: Any, *, field: str) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, AttributeError, TypeError):
        raise InvalidInput(f"{field} must be a UUID, got {str(value)[:80]!r}", field=field) from None


def validate_metadata(value: Any, *, field: str = "metadata") -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    raise InvalidInput(f"{field}: {METADATA_NOT_OBJECT}", field=field)


def validate_content(value: Any, *, field: str = "content") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field}: {CONTENT_EMPTY}", field=field)
    return check_content_size(value, field=field)


def validate_role(value: Any, *, field: str = "role") -> str:
    if value not in Role.values:
        raise InvalidInput(f"{field}: {ROLE_INVALID}, got {str(value)[:40]!r}", field=field)
    return str(value)


def validate_turn_number(value: Any, *, field: str = "turn_number") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{field}: {TURN_INVALID}", field=field)
    return value


def parse_timestamp(value: Any, *, field: str) -> dt.datetime | None:
    """ISO 8601 (a naive value is taken as UTC); None stays None."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        parsed: dt.datetime | None = value
    else:
        try:
            parsed = parse_datetime(str(value))
        except ValueError:
            parsed = None
    if parsed is None:
        raise InvalidInput(f"{field} must be an ISO 8601 date-time, got {str(value)[:60]!r}", field=field)
    if timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, dt.timezone.utc)
    return parsed


def validate_session_id(value: Any, *, field: str = "session_id") -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 500:
        raise InvalidInput(f"{field} must be a string of at most 500 characters", field=field)
    return value


# --- access ----------------------------------------------------------------------------------


def conversation_get_for_update(*, conversation_id: Any) -> Conversation:
    """Fetch and lock a conversation row; must run inside a transaction."""
    pk = parse_uuid(conversation_id, field="conversation_id")
    conversation = Conversation.objects.select_for_update().filter(pk=pk).first()
    if conversation is None:
        raise NotFound(f"conversation {pk} not found", field="conversation_id")
    return conversation


def conversation_get(*, conversation_id: Any) -> tuple[Conversation, list[Message]]:
    """A conversation with its messages in turn order."""
    pk = parse_uuid(conversation_id, field="conversation_id")
    with storage_op("conversation.get", conversation_id=str(pk)) as log:
        conversation = Conversation.objects.filter(pk=pk).first()
        if conversation is None:
            raise NotFound(f"conversation {pk} not found", field="conversation_id")
        messages = list(conversation.messages.order_by("turn_number").defer("search_vector"))
        log["messages"] = len(messages)
    return conversation, messages


# --- writes ----------------------------------------------------------------------------------


def conversation_begin(*, session_id: str | None = None, metadata: dict[str, Any] | None = None) -> Conversation:
    session_id = validate_session_id(session_id)
    metadata = validate_metadata(metadata)
    with storage_op("conversation.begin") as log:
        conversation = Conversation.objects.create(session_id=session_id, metadata=metadata)
        log["conversation_id"] = str(conversation.id)
    return conversation


def _next_turn(conversation: Conversation) -> int:
    """Caller holds the conversation row lock, so no other writer can take the same number."""
    last = (
        Message.objects.filter(conversation=conversation)
        .order_by("-turn_number")
        .values_list("turn_number", flat=True)
        .first()
    )
    return (last or 0) + 1


def _touch(conversation: Conversation) -> None:
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now())


def _announce_stored(message_ids: list[uuid.UUID]) -> None:
    """Tell the search pipeline (embeddings) once the rows are committed and visible."""
    announce_changed("message", message_ids)


def message_store(
    *,
    conversation_id: Any,
    role: str,
    content: str,
    turn_number: int | None = None,
    metadata: dict[str, Any] | None = None,
    created_at: Any = None,
) -> Message:
    role = validate_role(role)
    content = validate_content(content)
    turn_number = validate_turn_number(turn_number)
    metadata = validate_metadata(metadata)
    created = parse_timestamp(created_at, field="created_at")
    with storage_op("message.store") as log, transaction.atomic():
        conversation = conversation_get_for_update(conversation_id=conversation_id)
        if turn_number is None:
            turn_number = _next_turn(conversation)
        elif Message.objects.filter(conversation=conversation, turn_number=turn_number).exists():
            raise Conflict(
                f"turn_number {turn_number} already exists in conversation {conversation.id}", field="turn_number"
            )
        message = Message(
            conversation=conversation,
            turn_number=turn_number,
            role=role,
            content=content,
            metadata=metadata,
            created_at=created or timezone.now(),
        )
        message.save(force_insert=True)
        _touch(conversation)
        _announce_stored([message.id])
        log.update(conversation_id=str(conversation.id), message_id=str(message.id), turn=turn_number)
    return message
