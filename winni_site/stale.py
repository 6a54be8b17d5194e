"""Stale marks' interfaces (the service is core.anchors): the MCP tool `winni_item_confirm`, with
which the agent says a possibly stale item still holds or supersedes it, and the admin's page of
anchored items with the same two actions. Marks span every kind, so they belong to the assembly."""
from __future__ import annotations

from typing import Any, Literal

from core import anchors
from core.actors import actor_name_from_mcp
from core.mcp import McpRegistry, service_tool


@service_tool
def winni_item_confirm(item: str, action: Literal["confirm", "supersede"] = "confirm",
                       replacement: str | None = None) -> dict[str, Any]:
    """Settle an item recall marked possibly stale (a file it names changed since). item: "<kind>:<id>"
    as recall names it. confirm: it still holds (mark cleared until the next change). supersede: it
    no longer holds; replacement: what holds now (required for a memory)."""
    actor = actor_name_from_mcp()
    if action == "supersede":
        return anchors.item_supersede(item=item, replacement=replacement, actor=actor)
    return anchors.item_confirm(item=item, actor=actor)


MCP = McpRegistry(tools=[winni_item_confirm])
