"""MCP tools for conversations: validate the shape (pydantic, via the SDK), call a service,
return the seed's shape."""
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from conversations import outputs, services
from winni_site.mcp_support import service_tool

RoleName = Literal["user", "assistant", "system", "tool"]


def register(mcp: MCPServer) -> None:
    @mcp.tool()
    @service_tool
    def dewey_begin_conversation(
        session_id: str | None = None, metadata: dict[str, Any] | None = None
    ) -> outputs.BegunDict:
        """Start a conversation and get its id; use that id for every message of the session."""
        return outputs.begun_dict(services.conversation_begin(session_id=session_id, metadata=metadata))

    @mcp.tool()
    @service_tool
    def dewey_store_message(
        conversation_id: str,
        role: RoleName,
        content: str,
        turn_number: int | None = Field(default=None, ge=1),
        metadata: dict[str, Any] | None = None,
        created_at: str | None = None,
    ) -> outputs.StoredMessageDict:
        """Store one message. The server assigns the next turn number when turn_number is omitted;
        an existing turn number is a conflict. created_at (ISO 8601) defaults to now."""
        message = services.message_store(
            conversation_id=conversation_id,
            role=role,
            content=content,
            turn_number=turn_number,
            metadata=metadata,
            created_at=created_at,
        )
        return outputs.stored_message_dict(message)

    @mcp.tool()
    @service_tool
    def dewey_get_conversation(conversation_id: str) -> outputs.ConversationDict:
        """A whole conversation with its messages in turn order."""
        conversation, messages = services.conversation_get(conversation_id=conversation_id)
        return outputs.conversation_dict(conversation, messages)
