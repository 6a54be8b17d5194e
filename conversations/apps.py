from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

if TYPE_CHECKING:
    from core.searchable import HitFields


class ConversationsConfig(AppConfig):
    name = "conversations"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from conversations import filechanges
        from conversations.models import Conversation, Message, SessionDigest
        from conversations.services import (
            message_answers,
            message_display,
            message_echoes,
            message_embed_parts,
            message_passages,
            message_states,
            message_surroundings,
        )
        from core import anchors
        from core.projects import ProjectStore, register_store
        from core.searchable import Searchable, register

        register(Searchable(
            kind="message", model=Message, text=lambda m: m.content,
            label=lambda m: f"turn {m.turn_number} ({m.role})", embed_parts=message_embed_parts, passages=message_passages,
            batch_order=("conversation_id", "turn_number"),
            filters={"session_id": "conversation__session_id", "conversation_id": "conversation_id", "role": "role",
                     "project": "project"},
            surround=message_surroundings, hit_fields=_message_hit_fields, display=message_display,
            answers=message_answers, states=message_states, echoes=message_echoes,
            project_column="project_id",
            project_indexes=True,
        ))
        # Tool calls that change files record the change; turns that name files are anchored to them.
        anchors.register(anchors.Anchoring(kind="message", load=filechanges.messages_load,
                                           items=filechanges.message_items, changes=filechanges.message_changes))
        # A session's digest (conversations.services.digest): found by recall and automatic recall
        # beside the turns it sums up.
        register(Searchable(
            kind="digest", model=SessionDigest, text=lambda d: d.text, label=_digest_label,
            filters={"session_id": "session_id", "conversation_id": "conversation_id", "project": "project"},
            hit_fields=lambda d: {"conversation_id": str(d.conversation_id)}, project_column="project_id",
        ))
        register_store(ProjectStore(label="conversations", model=Conversation))
        # Messages are in their conversation's project (Message.project, kept by the database):
        # counted and moved with it.
        register_store(ProjectStore(label="messages", model=Message, counted=False, moved=False))
        register_store(ProjectStore(label="digests", model=SessionDigest, counted=False))


def _message_hit_fields(message: Any) -> HitFields:
    """A recall hit on a message names its conversation and turn."""
    return {"conversation_id": str(message.conversation_id) if message.conversation_id else None,
            "turn": message.turn_number}


def _digest_label(digest: Any) -> str:
    day = digest.started_at.date().isoformat() if digest.started_at else "undated"
    return f"digest of session {digest.session_id or digest.conversation_id} ({day})"
