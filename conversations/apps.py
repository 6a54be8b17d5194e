from typing import Any

from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from conversations.models import Conversation, Message
        from conversations.services import message_display, message_embed_parts, message_passages, message_surroundings
        from core.projects import ProjectStore, register_store
        from core.searchable import Searchable, register

        register(Searchable(
            kind="message", model=Message, text=lambda m: m.content,
            label=lambda m: f"turn {m.turn_number} ({m.role})", embed_parts=message_embed_parts, passages=message_passages,
            batch_order=("conversation_id", "turn_number"),
            filters={"session_id": "conversation__session_id", "conversation_id": "conversation_id", "role": "role",
                     "project": "project"},
            surround=message_surroundings, hit_fields=_message_hit_fields, display=message_display,
            project_column="project_id",
            project_indexes=True,
        ))
        register_store(ProjectStore(label="conversations", model=Conversation))
        # Messages are in their conversation's project (Message.project, kept by the database):
        # counted and moved with it.
        register_store(ProjectStore(label="messages", model=Message, counted=False, moved=False))


def _message_hit_fields(message: Any) -> dict[str, Any]:
    """A recall hit on a message names its conversation and turn."""
    return {"conversation_id": str(message.conversation_id) if message.conversation_id else None,
            "turn": message.turn_number}
