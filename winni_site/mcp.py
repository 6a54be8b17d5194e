"""The one MCP server: every app's `<app>/mcp.py` registers its tools, prompts and resources on it
via `register(server)`; this module builds the server and its streamable-HTTP app."""
from importlib import import_module

from django.conf import settings
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette

from winni_site.auth import MCP_SCOPE, ApiTokenVerifier

INSTRUCTIONS = (
    "Winni is the agent's long-term memory. Store each conversation turn (dewey_store_message), "
    "search past sessions (dewey_search / winni_recall), load the active startup context "
    "(dewey_get_startup_context) and the project's medallions at the start of a session."
)

# Tool modules beyond `<app>.mcp` (cross-app tools like winni_recall, a second tool set inside an
# app), each with a `register(server)`.
EXTRA_TOOL_MODULES: list[str] = ["winni_site.recall", "memory.librarian_mcp"]


def build_mcp_server() -> MCPServer:
    server = MCPServer(
        "winni",
        instructions=INSTRUCTIONS,
        token_verifier=ApiTokenVerifier(),
        # resource_server_url=None: plain bearer tokens, no OAuth discovery pushed on clients.
        auth=AuthSettings(
            issuer_url=f"http://{settings.WINNI_HOST}:{settings.WINNI_PORT}",
            resource_server_url=None,
            required_scopes=[MCP_SCOPE],
        ),
    )
    for app_name in settings.WINNI_APPS:
        module_name = f"{app_name}.mcp"
        try:
            module = import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.register(server)
    for module_name in EXTRA_TOOL_MODULES:
        import_module(module_name).register(server)
    _forbid_unknown_arguments(server)
    return server


def _forbid_unknown_arguments(server: MCPServer) -> None:
    """A misspelt argument must fail loudly instead of being silently dropped."""
    for tool in server._tool_manager.list_tools():
        model = tool.fn_metadata.arg_model
        model.model_config["extra"] = "forbid"
        model.model_rebuild(force=True)


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
