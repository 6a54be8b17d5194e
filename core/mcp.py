"""What every app's `mcp.py` uses to declare its MCP surface, and what turns it into SDK tools.

An app's `mcp.py` defines each tool as a module-level function (so it can be read, imported and
called on its own) and lists its tools, prompts and resources in one `MCP = McpRegistry(...)`;
winni_site/mcp.py builds the one server from every app's registry. `service_tool` wraps a
handler: service errors become `isError` results and DB connections do not leak out of the SDK's
worker threads. `strict_tool` makes a misspelt argument fail loudly instead of being dropped,
reports bad arguments in the words REST uses (`argument_problem`), never pydantic's, and writes
each answer's text as compact JSON."""
from __future__ import annotations

import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar, cast, overload

from django.db import DataError, close_old_connections
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails, to_json

from core import access
from core.errors import ApplicationError, InvalidInput, from_database_error
from core.redaction import add_counts, counting
from core.validation import (
    AT_LEAST,
    AT_MOST,
    CHARS_AT_LEAST,
    CHARS_AT_MOST,
    ITEMS_AT_MOST,
    NOT_A,
    NOT_ONE_OF,
    REQUIRED,
    UNKNOWN_FIELD,
    json_type,
    shown_value,
)

F = TypeVar("F", bound=Callable[..., Any])


def token_access() -> access.Access | None:
    """The access of the token behind the current MCP call (core.access), None outside one."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    return None if token is None else access.from_scopes(token.client_id, list(token.scopes))


@overload
def service_tool(fn: F, *, needs: str = access.WRITE) -> F: ...
@overload
def service_tool(fn: None = None, *, needs: str = access.WRITE) -> Callable[[F], F]: ...
def service_tool(fn: F | None = None, *, needs: str = access.WRITE) -> F | Callable[[F], F]:
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
            raise tool_error(exc) from exc
        except DataError as exc:
            raise tool_error(from_database_error(exc)) from exc
        finally:
            close_old_connections()

    return cast(F, wrapper)


def tool_error(error: ApplicationError) -> ToolError:
    """The one shape of an MCP tool error: `<code>: <message>`, the message naming the argument
    once ("not_found: project: no project named 'nope'; …"), as REST's `message` does."""
    return ToolError(f"{error.code}: {error.message}")


def read_tool(fn: F) -> F:
    """`service_tool` for a tool that changes nothing: a read token may call it."""
    return service_tool(fn, needs=access.READ)


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
            raise tool_error(exc) from exc
        finally:
            close_old_connections()

    return cast(F, wrapper)


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


# pydantic's error types, by the JSON type the argument must have.
_EXPECTED = {
    "string_type": "a string", "int_type": "an integer", "int_parsing": "an integer",
    "int_from_float": "an integer", "float_type": "a number", "float_parsing": "a number",
    "bool_type": "a boolean (true or false)", "bool_parsing": "a boolean (true or false)",
    "list_type": "an array", "dict_type": "an object", "model_type": "an object",
    "model_attributes_type": "an object",
}


def _location(loc: tuple[int | str, ...]) -> str:
    """("messages", 1, "content") -> "messages[1].content", as REST names a nested field."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _model_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The pydantic model whose field `loc` names (the arguments, or a nested object's model)."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)) or part not in current.model_fields:
            return None
        current = current.model_fields[part].annotation
        # Look through Optional[...] and list[...] to the model inside.
        while typing.get_origin(current) in (typing.Union, types.UnionType, list):
            inner = [arg for arg in typing.get_args(current) if arg is not type(None)]
            current = inner[0] if len(inner) == 1 else None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def argument_problem(error: ErrorDetails, model: type[BaseModel]) -> str:
    """One pydantic error as REST words it: "content: must be a string, got a number" (no
    pydantic type codes, input dumps or links)."""
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    loc = tuple(error["loc"])
    if kind == "missing":
        problem = REQUIRED
    elif kind == "extra_forbidden":
        known = _model_at(model, loc)
        problem = UNKNOWN_FIELD.format(known=", ".join(known.model_fields) if known else "")
    elif kind in _EXPECTED:
        problem = NOT_A.format(expected=_EXPECTED[kind], got=json_type(value))
    elif kind == "literal_error":
        problem = NOT_ONE_OF.format(choices=ctx.get("expected", ""), got=shown_value(value))
    elif kind in ("less_than_equal", "less_than"):
        limit = ctx.get("le", ctx.get("lt"))
        problem = AT_MOST.format(limit=limit if kind == "less_than_equal" else f"less than {limit}", got=value)
    elif kind in ("greater_than_equal", "greater_than"):
        limit = ctx.get("ge", ctx.get("gt"))
        problem = AT_LEAST.format(limit=limit if kind == "greater_than_equal" else f"more than {limit}", got=value)
    elif kind == "string_too_long":
        problem = CHARS_AT_MOST.format(limit=ctx.get("max_length"), got=len(value))
    elif kind == "string_too_short":
        problem = CHARS_AT_LEAST.format(limit=ctx.get("min_length"), got=len(value))
    elif kind == "too_long":
        problem = ITEMS_AT_MOST.format(limit=ctx.get("max_length"), got=ctx.get("actual_length"))
    else:
        # A rule without words of ours: pydantic's own sentence, which carries no link or dump.
        problem = error["msg"][0].lower() + error["msg"][1:]
    return f"{_location(loc)}: {problem}" if loc else problem


def arguments_error(exc: ValidationError, model: type[BaseModel]) -> InvalidInput:
    """A call's bad arguments as an `invalid` error naming the first one (HC format_first_error);
    an unknown argument goes first, since it explains a missing one ("rolle" for "role")."""
    errors = exc.errors(include_url=False)
    first = next((error for error in errors if error["type"] == "extra_forbidden"), errors[0])
    loc = first["loc"]
    return InvalidInput(argument_problem(first, model), field=str(loc[0]) if loc else None)


class PlainTool(Tool):
    """The SDK's Tool, its errors in our words: pydantic's ValidationError (a dump of type codes
    and a link to pydantic's site) becomes one sentence in REST's words, and the SDK's "Error
    executing tool NAME:" prefix is dropped (the caller knows which tool it called)."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            return await super().run(arguments, context, convert_result=convert_result)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise tool_error(arguments_error(cause, self.fn_metadata.arg_model)) from cause
            if isinstance(cause, ToolError):
                raise ToolError(str(cause)) from cause
            raise


def lean_schema(schema: Any) -> Any:
    """A tool's JSON schema as the agent's model needs it, every session: without pydantic's
    "title" keywords ("Session Id" beside the property session_id; a property named "title"
    stays), an optional argument as its own type (`{"type": "string"}`, not `anyOf` with null and
    `"default": null`: leaving it out is how it is omitted; the server still takes null), and
    nested models written in place instead of `$defs` and `$ref` (strict validators and some
    clients resolve no references). Together a third of the default set's tools/list."""
    definitions = schema.get("$defs", {}) if isinstance(schema, dict) else {}

    def lean(node: Any) -> Any:
        if isinstance(node, list):
            return [lean(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return lean({**definitions[node["$ref"].rsplit("/", 1)[-1]],
                         **{key: value for key, value in node.items() if key != "$ref"}})
        options = node.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options and node.get("default", None) is None:
            kept = [option for option in options if option != {"type": "null"}]
            rest = {key: value for key, value in node.items() if key not in ("anyOf", "default")}
            return lean({**(kept[0] if len(kept) == 1 else {"anyOf": kept}), **rest})
        return {key: lean(value) for key, value in node.items()
                if key != "$defs" and not (key == "title" and isinstance(value, str))}

    return lean(schema)


def plain_description(text: str) -> str:
    """A docstring as one paragraph: its indentation and line breaks are characters every
    session's tools/list carries and the model does not need."""
    return " ".join(text.split()) if text else text


def strict_tool(fn: Callable[..., Any]) -> Tool:
    """The SDK's Tool for `fn`, refusing arguments `fn` does not declare and answering in compact
    JSON.

    The SDK builds each tool's argument model (pydantic) from the function's signature and offers
    no option to forbid extra arguments: a misspelt one ("rolle") would be dropped silently and
    the call would go on without it. Its FuncMetadata reads `arg_model` live on each call (its
    documented contract), so the model is replaced here by a subclass with extra="forbid"; the
    published JSON schema is the SDK's, made lean (`lean_schema`). The tools go
    to the server through the public
    `MCPServer(tools=...)`, never through its private tool manager.
    tests/core/test_mcp_tools.py fails if the SDK stops honouring this.

    Each answer travels as JSON text in `content` and, when the SDK could derive a schema from the
    return type (`outputSchema`), also as `structuredContent`. The SDK would write the text
    indented, a third more characters than the data; a client that shows the text to its model
    (Claude Code does when there is no `structuredContent`; it hands the model that as compact
    JSON when there is) would read fewer results in the same tokens, and a search page's
    `max_chars` counts compact JSON, so the text is compact.

    Bad arguments are reported in REST's words (PlainTool)."""
    tool = PlainTool.from_function(fn)
    loose = tool.fn_metadata.arg_model
    tool.fn_metadata.arg_model = type(loose.__name__, (loose,), {
        "__module__": loose.__module__, "model_config": ConfigDict(extra="forbid"),
    })
    tool.parameters = lean_schema(tool.parameters)
    tool.description = plain_description(tool.description)
    # The answer's shape is not published (outputSchema): the model reads the answer itself, and
    # the shapes cost every session's tools/list a seventh of its size; REST's OpenAPI schema
    # has them. structuredContent still travels where the SDK could derive a shape.
    structured = tool.fn_metadata.output_schema is not None
    tool.fn_metadata.output_schema = None
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
