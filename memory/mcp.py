"""MCP tools and prompts of the memory app: store_memory, search_memory (seed 003) and the persona
prompts. No tool deletes memories (seed 003: the agent never deletes them)."""
from typing import Any, Callable

from core import timerank
from core.actors import actor_name_from_mcp
from core.mcp import McpRegistry, Prompt, read_tool, service_tool
from memory import inputs, outputs, personas, services


@service_tool
@inputs.STORE.tool
def store_memory(**given: Any) -> outputs.StoredMemoryDict:
    """Remember a fact, decision or preference. tags: up to 10. project: a slug (default: the
    conversation's, else global). supersedes: ids of memories this one replaces. The answer lists
    similar memories: update_memory one instead of storing a near-copy."""
    memory, created, similar = services.memory_remember(**given)
    return outputs.stored_memory_dict(memory, created, similar)


@read_tool
@inputs.SEARCH.tool
def search_memory(**given: Any) -> outputs.SearchMemoryDict:
    """Memories by meaning, relevance_score 0-100 (under 30 left out). With project: also the global
    ones unless project_only. Superseded ones only with include_superseded. Dates ISO 8601;
    time words read as of as_of; recency: a half-life in days."""
    query = given["query"]
    time = timerank.plan(query if isinstance(query, str) else "", as_of=given.pop("as_of"),
                         recency=given.pop("recency"))
    hits = services.memory_search(**given, time=time)
    return outputs.search_memory_dict(query, hits, time)


@service_tool
@inputs.UPDATE.tool
def update_memory(**given: Any) -> outputs.UpdatedMemoryDict:
    """Change a memory in place (same id; the old text kept as a version, with reason). Tags replace
    the old list."""
    memory, changed = services.memory_update(**given, actor=actor_name_from_mcp())
    return outputs.updated_memory_dict(memory, changed)


@read_tool
def memory_history(memory_id: str) -> outputs.MemoryHistoryDict:
    """Every version of a memory, the current one first."""
    memory, versions = services.memory_history(memory_id=memory_id)
    return outputs.memory_history_dict(memory, versions)


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


MCP = McpRegistry(tools=[store_memory, search_memory, update_memory, memory_history], prompts=prompts)
