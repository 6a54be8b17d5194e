"""Who is acting, as a name for audit rows: the API token's name behind an MCP or REST call."""
from typing import Any


def actor_name_from_mcp() -> str:
    """The token name behind the current MCP call."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    access = get_access_token()
    return access.client_id if access else "anonymous"


def actor_name_from_rest(request: Any) -> str:
    """The token name behind a REST call (its principal prints it), or the signed-in user's name."""
    return str(request.user)
