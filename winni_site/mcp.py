"""The one MCP server: every app's `<app>/mcp.py` lists its tools, prompts and resources in its
`MCP` registry (core.mcp.McpRegistry); this module builds the server from them, plus the
assembly's own cross-app tools (winni_recall, winni_projects), and its streamable-HTTP app."""
from importlib import import_module
from typing import Any

from django.conf import settings
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import Tool as MCPTool
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

from agents import mcp as agents_mcp
from core.errors import Forbidden
from core.mcp import McpRegistry, strict_tool, token_access, tool_error, with_access
from winni_site import projects, recall, stale, toolsets
from winni_site.auth import MCP_SCOPE, ApiTokenVerifier

INSTRUCTIONS = (
    "Winni is the agent's long-term memory; its hooks store every turn. Search before re-investigating "
    "(winni_recall's one-line rows, then winni_get for the ones needed; dewey_search), remember decisions and conventions (store_memory), load the startup "
    "context (dewey_get_startup_context) and the project's medallions (medallion_load_for_scope), and "
    "checkpoint a finished task (medallion_checkpoint_session)."
)


def registries() -> list[McpRegistry]:
    """Each app's registry (`<app>.mcp.MCP`, in WINNI_APPS order), then winni_recall's, the
    agents' (winni_context), winni_projects' and winni_item_confirm's."""
    found = []
    for app_name in settings.WINNI_APPS:
        module_name = f"{app_name}.mcp"
        try:
            module = import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        found.append(module.MCP)
    return [*found, recall.MCP, agents_mcp.MCP, projects.MCP, stale.MCP]


TOOLSET_OUTSIDE = ("the tool {tool} is in the tool set {set!r}; this token ({token}) may use the tool sets {sets} "
                   "(a token for it: `./winni manage winni_token create NAME --toolset {set}`)")


class WinniMcpServer(MCPServer):
    """The SDK's server, each token seeing only its tool sets (ApiToken.toolsets; none: every
    served set): tools/list lists no other tool, and calling one is refused naming its set."""

    async def list_tools(self) -> list[MCPTool]:
        allowed = _token_tools()
        return [tool for tool in await super().list_tools() if allowed is None or tool.name in allowed]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        allowed = _token_tools()
        if allowed is not None and name not in allowed:
            granted = token_access()
            home = next((set_name for set_name, (_, tools) in toolsets.TOOLSETS.items() if name in tools), None)
            if home is not None and granted is not None:
                raise tool_error(Forbidden(TOOLSET_OUTSIDE.format(tool=name, set=home, token=granted.token,
                                                                  sets=", ".join(granted.toolsets))))
        return await super().call_tool(name, arguments, context)


def _token_tools() -> set[str] | None:
    """The tools the calling token's sets hold; None: no limit (no token sets, or no token)."""
    granted = token_access()
    return None if granted is None or not granted.toolsets else toolsets.tool_names(granted.toolsets)


def build_mcp_server() -> MCPServer:
    """The server with the tools of the sets WINNI_MCP_TOOLSETS names (winni_site/toolsets.py),
    and every prompt and resource."""
    surfaces = registries()
    served = toolsets.tool_names(settings.WINNI_MCP_TOOLSETS)
    server = WinniMcpServer(
        "winni",
        instructions=INSTRUCTIONS,
        token_verifier=ApiTokenVerifier(),
        # resource_server_url=None: plain bearer tokens, no OAuth discovery pushed on clients.
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(f"http://{settings.WINNI_HOST}:{settings.WINNI_PORT}"),
            resource_server_url=None,
            required_scopes=[MCP_SCOPE],
        ),
        tools=[strict_tool(fn) for surface in surfaces for fn in surface.tools if fn.__name__ in served],
    )
    for surface in surfaces:
        for prompt in surface.prompt_list():
            server.prompt(name=prompt.name, description=prompt.description)(with_access(prompt.fn))
        for resource in surface.resources:
            server.resource(resource.uri, name=resource.name, description=resource.description,
                            mime_type=resource.mime_type)(with_access(resource.fn))
    return server


def _allowed_hosts() -> list[str]:
    hosts: list[str] = []
    for host in settings.ALLOWED_HOSTS:
        hosts += [host, f"{host}:*"]
    return hosts


def build_mcp_app() -> Starlette:
    server = build_mcp_server()
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection="*" not in settings.ALLOWED_HOSTS,
        allowed_hosts=_allowed_hosts(),
        allowed_origins=list(settings.WINNI_ALLOWED_ORIGINS),
    )
    return server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=security,
        max_request_body_size=settings.WINNI_MAX_REQUEST_BYTES,
        host=settings.WINNI_HOST,
    )
