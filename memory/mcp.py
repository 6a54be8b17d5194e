"""MCP tools and prompts of the memory app: store_memory, search_memory (seed 003) and the persona
prompts. No tool deletes memories (seed 003: the agent never deletes them)."""
from typing import Any, Callable

from pydantic import Field

from core.mcp import McpRegistry, Prompt, service_tool
from memory import outputs, personas, services


@service_tool
def store_memory(
    content: str,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    conversation_id: str | None = None,
    message_id: str | None = None,
    project: str | None = None,
) -> outputs.StoredMemoryDict:
    """Remember a fact, preference or decision for future sessions. Tags: up to 10, each 1-50
    characters (e.g. preference, decision). project: an existing project's slug or name; omitted,
    the project of conversation_id (or message_id), else a global memory. The same content stored
    twice in one project returns the existing memory (duplicate: true)."""
    memory, created = services.memory_store(content=content, tags=tags, metadata=metadata,
                                            conversation_id=conversation_id, message_id=message_id, project=project)
    return outputs.stored_memory_dict(memory, created)


@service_tool
def search_memory(
    query: str, limit: int = Field(default=5), tags: list[str] | None = None, project: str | None = None,
    start_date: str | None = None, end_date: str | None = None,
) -> outputs.SearchMemoryDict:
    """Search memories by meaning. limit 1-20 (default 5); tags: only memories carrying all of
    them; project: only that project's; start_date/end_date (ISO 8601; a date alone is the whole
    day): only memories stored in that range. Each result has a relevance_score 0-100; results
    under 30 are left out."""
    hits = services.memory_search(query=query, limit=limit, tags=tags, project=project, start_date=start_date,
                                  end_date=end_date)
    return outputs.search_memory_dict(query, hits)


def persona(name: str = "") -> str:
    return personas.persona_text(name or None)[1]


def _persona_named(name: str) -> Callable[[], str]:
    def prompt() -> str:
        return personas.persona_text(name)[1]

    return prompt


def prompts() -> list[Prompt]:
    """One prompt per persona file (WINNI_PERSONA_FILES, read when the server is built), then
    `persona`, which takes the name as an argument."""
    named = [Prompt(_persona_named(name), name=name, description=f"The {name!r} persona (from WINNI_PERSONA_FILES)")
             for name in personas.persona_files()]
    return [*named, Prompt(persona, name="persona",
                           description="A persona by name; unknown names fall back to the default persona")]


MCP = McpRegistry(tools=[store_memory, search_memory], prompts=prompts)
