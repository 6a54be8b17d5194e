"""What every app's `mcp.py` uses to declare its MCP surface, and what turns it into SDK tools.

An app's `mcp.py` defines each tool as a module-level function (so it can be read, imported and
called on its own) and lists its tools, prompts and resources in one `MCP = McpRegistry(...)`;
winni_site/mcp.py builds the one server from every app's registry. `service_tool` wraps a
handler: service errors become `isError` results and DB connections do not leak out of the SDK's
worker threads. `strict_tool` makes a misspelt argument fail loudly instead of being dropped and
writes each answer's text as compact JSON."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from django.db import DataError, close_old_connections
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import ConfigDict
from pydantic_core import to_json

from core import access
from core.errors import ApplicationError, from_database_error
from core.redaction import add_counts, counting

F = TypeVar("F", bound=Callable[..., Any])


def token_access() -> access.Access | None:
    """The access of the token behind the current MCP call (core.access), None outside one."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    return None if token is None else access.from_scopes(token.client_id, list(token.scopes))


def service_tool(fn: F | None = None, *, needs: str = access.WRITE) -> Any:
    """Wrap a sync tool handler (the SDK runs it in a worker thread, where Django's request
    cleanup never runs): close stale connections around the call, act with the token's access
    (core.access: a tool that changes data `needs` a write token, `read_tool`s a read token; a
    token limited to projects sees only theirs), turn an ApplicationError into a ToolError,
    which the SDK reports as `isError: true` with our message, and add the call's redaction
    counts to a JSON object answer (core.redaction)."""
    if fn is None:
        return functools.partial(service_tool, needs=needs)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            with access.acting_as(token_access()), counting() as tally:
                access.require(needs, what=f"the tool {fn.__name__}")
                return add_counts(fn(*args, **kwargs), tally)
        except ApplicationError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from exc
        except DataError as exc:
            error = from_database_error(exc)
            raise ToolError(f"{error.code}: {error.message}") from exc
        finally:
            close_old_connections()

    return wrapper  # type: ignore[return-value]


def read_tool(fn: F) -> F:
    """`service_tool` for a tool that changes nothing: a read token may call it."""
    return service_tool(fn, needs=access.READ)  # type: ignore[no-any-return]


def with_access(fn: F) -> F:
    """A prompt or resource handler run with the token's access (a token limited to projects
    reads only theirs), its service errors reported like a tool's."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            with access.acting_as(token_access()):
                return fn(*args, **kwargs)
        except ApplicationError as exc:
            raise ToolError(f"{exc.code}: {exc.message}") from exc
        finally:
            close_old_connections()

    return wrapper  # type: ignore[return-value]


@dataclass(frozen=True)
class Prompt:
    fn: Callable[..., Any]
    name: str
    description: str


@dataclass(frozen=True)
class Resource:
    fn: Callable[..., Any]
    uri: str  # may hold {parameters}: a resource template
    name: str | None = None
    description: str | None = None
    mime_type: str | None = None


@dataclass(frozen=True)
class McpRegistry:
    """One app's MCP surface. A tool is named after its function and described by its docstring.
    `prompts` may be a function that lists them when the server is built (one per configured file)."""

    tools: Sequence[Callable[..., Any]] = ()
    prompts: Sequence[Prompt] | Callable[[], Sequence[Prompt]] = ()
    resources: Sequence[Resource] = ()

    def prompt_list(self) -> list[Prompt]:
        return list(self.prompts() if callable(self.prompts) else self.prompts)


def strict_tool(fn: Callable[..., Any]) -> Tool:
    """The SDK's Tool for `fn`, refusing arguments `fn` does not declare and answering in compact
    JSON.

    The SDK builds each tool's argument model (pydantic) from the function's signature and offers
    no option to forbid extra arguments: a misspelt one ("rolle") would be dropped silently and
    the call would go on without it. Its FuncMetadata reads `arg_model` live on each call (its
    documented contract), so the model is replaced here by a subclass with extra="forbid"; the
    published JSON schema stays the SDK's. The tools go to the server through the public
    `MCPServer(tools=...)`, never through its private tool manager.
    tests/test_mcp_tools.py fails if the SDK stops honouring this.

    Each answer travels as JSON text in `content` and, when the SDK could derive a schema from the
    return type (`outputSchema`), also as `structuredContent`. The SDK would write the text
    indented, a third more characters than the data; a client that shows the text to its model
    (Claude Code does when there is no `structuredContent`; it hands the model that as compact
    JSON when there is) would read fewer results in the same tokens, and a search page's
    `max_chars` counts compact JSON, so the text is compact."""
    tool = Tool.from_function(fn)
    loose = tool.fn_metadata.arg_model
    tool.fn_metadata.arg_model = type(loose.__name__, (loose,), {
        "__module__": loose.__module__, "model_config": ConfigDict(extra="forbid"),
    })
    structured = tool.output_schema is not None
    wrapped = tool.fn_metadata.wrap_output  # an Optional answer's structuredContent is {"result": ...}

    @functools.wraps(fn)
    def answer(*args: Any, **kwargs: Any) -> CallToolResult:
        value = fn(*args, **kwargs)
        return CallToolResult(
            content=[TextContent(type="text", text=to_json(value, fallback=str).decode())],
            structured_content=({"result": value} if wrapped else value) if structured else None,
        )

    tool.fn = answer
    return tool
