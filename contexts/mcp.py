"""MCP tools, prompt and resources for startup contexts (seed 001 §5.3)."""
from typing import Any

from contexts import inputs, outputs, services
from core.actors import actor_name_from_mcp
from core.mcp import McpRegistry, Prompt, Resource, read_tool, service_tool

NO_ACTIVE_CONTEXT = "No startup context is active."


@read_tool
@inputs.GET.tool
def dewey_get_startup_context(**given: Any) -> outputs.ContextDict | None:
    """The active startup context (or the one named), global or project's; null when none."""
    context = services.context_get(**given)
    return outputs.context_dict(context) if context else None


@service_tool
@inputs.SET.tool
def dewey_set_startup_context(**given: Any) -> outputs.ContextSetDict:
    """Create or update a startup context; set_active (default true) makes it the active context
    of its scope, loaded at the start of the next session. project (an existing project's slug or
    name): a context of that project, loaded in its sessions after the global one; omitted: a
    global context, loaded in every session."""
    context = services.context_set(**given, actor=actor_name_from_mcp())
    return outputs.context_set_dict(context)


@read_tool
@inputs.LIST.tool
def dewey_list_startup_contexts(**given: Any) -> outputs.ContextListDict:
    """All startup contexts (global and per project) by project and name, or only one project's;
    content only when include_content is true."""
    return outputs.context_list_dict(services.context_list(project=given["project"]),
                                     include_content=given["include_content"])


@service_tool
@inputs.DELETE.tool
def dewey_delete_startup_context(**given: Any) -> outputs.DeletedDict:
    """Delete a startup context (of project, or a global one); refused unless force is true."""
    services.context_delete(**given, actor=actor_name_from_mcp())
    return {"deleted": True}


@service_tool
def startup_context() -> str:
    context = services.context_get()
    return context.content if context else NO_ACTIVE_CONTEXT


@service_tool
def startup_context_resource(name: str) -> str:
    context = services.context_get(name=name)
    assert context is not None  # a named lookup raises NotFound instead
    return context.content


MCP = McpRegistry(
    tools=[
        dewey_get_startup_context,
        dewey_set_startup_context,
        dewey_list_startup_contexts,
        dewey_delete_startup_context,
    ],
    prompts=[
        Prompt(startup_context, name="startup_context",
               description="The active startup context: load it at the start of a session."),
    ],
    resources=[
        Resource(startup_context_resource, "winni://contexts/{name}", name="startup_context_by_name",
                 description="A startup context by name", mime_type="text/markdown"),
    ],
)
