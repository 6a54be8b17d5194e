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
    """Settle an item that recall or automatic recall showed as possibly stale (a file it names
    changed since it was written). item: its key "<kind>:<id>" as recall names it (e.g.
    "memory:9a4f…", "decision:<medallion id>:d1"). action "confirm": it still holds, the mark
    clears until the file changes again. action "supersede": it no longer holds; replacement is
    what holds now (required for a memory, which the replacement supersedes; a decision is marked
    superseded, the replacement added as a new decision). A turn cannot be superseded."""
    actor = actor_name_from_mcp()
    if action == "supersede":
        return anchors.item_supersede(item=item, replacement=replacement, actor=actor)
    return anchors.item_confirm(item=item, actor=actor)


MCP = McpRegistry(tools=[winni_item_confirm])
