"""The return shapes of seed 001 §5, shared by MCP tools and REST views (one place per shape)."""
from typing import Any, TypedDict

from conversations.models import Conversation, Message


class MessageDict(TypedDict):
    id: str
    turn: int
    role: str
    content: str
    metadata: dict[str, Any] | None
    created_at: str


class ConversationDict(TypedDict):
    conversation_id: str
    session_id: str | None
    created_at: str
    updated_at: str
    metadata: dict[str, Any] | None
    messages: list[MessageDict]


class BegunDict(TypedDict):
    conversation_id: str
    session_id: str | None
    created_at: str


class StoredMessageDict(TypedDict):
    message_id: str
    conversation_id: str
    turn_number: int
    created_at: str


def begun_dict(conversation: Conversation) -> BegunDict:
    return {
        "conversation_id": str(conversation.id),
        "session_id": conversation.session_id,
        "created_at": conversation.created_at.isoformat(),
    }


def stored_message_dict(message: Message) -> StoredMessageDict:
    return {
        "message_id": str(message.id),
        "conversation_id": str(message.conversation_id),
        "turn_number": message.turn_number,
        "created_at": message.created_at.isoformat(),
    }


def message_dict(message: Message) -> MessageDict:
    return {
        "id": str(message.id),
        "turn": message.turn_number,
        "role": message.role,
        "content": message.content,
        "metadata": message.metadata,
        "created_at": message.created_at.isoformat(),
    }


def conversation_dict(conversation: Conversation, messages: list[Message]) -> ConversationDict:
    return {
        "conversation_id": str(conversation.id),
        "session_id": conversation.session_id,
        "created_at": conversation.created_at.isoformat(),
        "updated_at": conversation.updated_at.isoformat(),
        "metadata": conversation.metadata,
        "messages": [message_dict(message) for message in messages],
    }
