"""The MCP surface as code: every tool is a module-level function listed in its app's registry
(importable and callable on its own), and a misspelt argument fails loudly (core.mcp.strict_tool).
The SDK offers no option to forbid unknown arguments; if a new SDK stops honouring the way
strict_tool does it, the tests below fail."""
import asyncio
import importlib
import json

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from pydantic import ValidationError

from contexts import mcp as contexts_mcp
from conversations.mcp import dewey_search, dewey_store_message
from core import mcp as core_mcp
from core.mcp import McpRegistry, strict_tool
from winni_site import mcp as assembly

ARGUMENTS = {"conversation_id": "c5b0b5a6-0d4f-4a4e-9d3c-7d2a2f0e7b11", "role": "user", "content": "x"}


def test_the_sdk_alone_drops_an_unknown_argument_strict_tool_refuses_it():
    loose = Tool.from_function(dewey_store_message)
    assert "rolle" not in loose.fn_metadata.validate_arguments({**ARGUMENTS, "rolle": "user"})
    strict = strict_tool(dewey_store_message)
    with pytest.raises(ValidationError, match="rolle"):
        strict.fn_metadata.validate_arguments({**ARGUMENTS, "rolle": "user"})
    assert strict.fn_metadata.validate_arguments(ARGUMENTS)["role"] == "user"
    # The published schema is the SDK's own, made lean (no titles, no null branches).
    assert strict.parameters == core_mcp.lean_schema(loose.parameters) and "title" not in json.dumps(strict.parameters)
    assert set(strict.parameters["properties"]) == set(loose.parameters["properties"])


def test_a_server_built_with_strict_tools_reports_the_misspelt_argument():
    server = MCPServer("strict", tools=[strict_tool(dewey_store_message)])
    with pytest.raises(ToolError, match="^invalid: rolle: is not a field of this request"):
        asyncio.run(server.call_tool("dewey_store_message", {**ARGUMENTS, "rolle": "user"}))


# --- bad arguments in plain words, through the real streamable-HTTP transport ------------------

PLAIN_ERRORS = [
    ("store_memory", {"content": 42}, "invalid: content: must be a string, got a number"),
    ("store_memory", {"tags": ["decision"]}, "invalid: content: is required"),
    ("store_memory", {"content": "x", "tagz": ["decision"]},
     "invalid: tagz: is not a field of this request (fields: content, tags, metadata, conversation_id, "
     "message_id, project, supersedes)"),
    ("store_memory", {"content": "x", "project": "nope"},
     "not_found: project: no project named 'nope'; projects are created by capture (the hooks) or with "
     "`manage.py winni_project create NAME`"),
    ("dewey_store_message", {"conversation_id": ARGUMENTS["conversation_id"], "rolle": "user", "content": "x"},
     "invalid: rolle: is not a field of this request (fields: conversation_id, role, content, turn_number, "
     "metadata, created_at)"),
    ("search_memory", {"query": "x", "limit": 21}, "invalid: limit: must be at most 20, got 21"),
    ("dewey_search", {"query": "x", "limit": 0}, "invalid: limit: must be at least 1, got 0"),
    ("dewey_search", {"query": "x", "mode": "exact"},
     "invalid: mode: must be one of 'fts', 'semantic' or 'hybrid', got 'exact'"),
    ("store_memory", {"content": "x", "tags": ["ok", 7]}, "invalid: tags[1]: must be a string, got a number"),
    ("medallion_load_for_scope", {"scope": {"nodes": ["x"]}},
     "invalid: scope.nodes: is not a field of this request (fields: graph_nodes, tags)"),
]


@pytest.mark.live
def test_bad_arguments_are_one_sentence_in_rests_words(mcp_legacy):
    for tool, arguments, expected in PLAIN_ERRORS:
        message = mcp_legacy.call_error(tool, arguments)
        assert message == expected, (tool, arguments)
        for dump in ("pydantic", "https://", "validation error for", "Error executing tool", "type="):
            assert dump not in message, (tool, message)


def test_the_words_are_rests():
    """MCP and REST name the same rule alike: the words are core.validation's, shared."""
    from core import rest, validation

    assert rest.NOT_A is validation.NOT_A and rest.UNKNOWN_FIELD is validation.UNKNOWN_FIELD


def test_every_tool_is_a_module_level_function_of_its_apps_mcp_module():
    names = []
    for registry in assembly.registries():
        assert isinstance(registry, McpRegistry)
        for tool in registry.tools:
            module = importlib.import_module(tool.__module__)
            assert getattr(module, tool.__name__) is tool and module.MCP is registry
            names.append(tool.__name__)
    assert len(names) == len(set(names))
    listed = asyncio.run(assembly.build_mcp_server().list_tools())
    assert sorted(tool.name for tool in listed) == sorted(names)


@pytest.mark.django_db(transaction=True)  # service_tool closes stale connections, as in the SDK's threads
def test_a_tool_can_be_called_on_its_own():
    contexts_mcp.dewey_set_startup_context(name="ops", content="Deploy with helm.")
    assert contexts_mcp.dewey_get_startup_context()["name"] == "ops"
    with pytest.raises(ToolError, match="not_found"):
        contexts_mcp.dewey_get_startup_context(name="nope")


@pytest.mark.django_db(transaction=True)
def test_answers_are_compact_json_text_beside_the_structured_content():
    """The SDK writes a tool's text indented; strict_tool sends the same data compact, and keeps
    structuredContent where the SDK can derive the answer's shape (an Optional answer wrapped), though no
    output schema is published (core.mcp.strict_tool)."""
    server = MCPServer("compact", tools=[strict_tool(fn) for fn in (
        contexts_mcp.dewey_set_startup_context, contexts_mcp.dewey_get_startup_context, dewey_search)])

    def call(name: str, arguments: dict) -> tuple[str, object]:
        result = asyncio.run(server.call_tool(name, arguments))
        assert not result.is_error
        (block,) = result.content
        return block.text, result.structured_content

    text, structured = call("dewey_set_startup_context", {"name": "ops", "content": "Deploy with helm."})
    assert json.loads(text) == structured and structured["name"] == "ops"
    assert text == json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
    text, structured = call("dewey_get_startup_context", {})
    assert structured == {"result": json.loads(text)} and "\n" not in text
    text, structured = call("dewey_search", {"query": "helm"})  # a page: text alone
    assert structured is None and json.loads(text)["results"] == [] and "\n" not in text


def test_a_tool_and_its_endpoint_take_the_inputs_they_share_from_one_declaration():
    """core.inputs: winni_recall's arguments and REST recall's fields both come from RECALL, a bound
    is published and worded alike, and choices the apps register reach REST once they are loaded."""
    from core.rest import type_problem
    from winni_site.recall import RecallApi, winni_recall

    tool = strict_tool(winni_recall)
    fields = RecallApi.InputSerializer().fields
    assert set(tool.parameters["properties"]) == {*fields, "detail"}  # detail: MCP's alone
    assert tool.parameters["required"] == ["query"] == [name for name, field in fields.items() if field.required]
    assert tool.parameters["properties"]["limit"] == {"default": 10, "maximum": 100, "minimum": 1, "type": "integer"}
    assert (fields["limit"].default, fields["limit"].min_value, fields["limit"].max_value) == (10, 1, 100)
    with pytest.raises(ValidationError) as error:
        tool.fn_metadata.validate_arguments({"query": "x", "limit": 101})
    said = core_mcp.argument_problem(error.value.errors()[0], tool.fn_metadata.arg_model)
    assert said == f"limit: {type_problem(fields['limit'], 101)}" == "limit: must be at most 100, got 101"
    assert {"message", "memory"} <= set(fields["kinds"].child.choices)


# --- tool sets (WINNI_MCP_TOOLSETS) --------------------------------------------------------------


def test_every_registered_tool_is_in_exactly_one_set():
    from winni_site.toolsets import TOOLSETS

    registered = [tool.__name__ for registry in assembly.registries() for tool in registry.tools]
    in_sets = [name for _, names in TOOLSETS.values() for name in names]
    assert sorted(in_sets) == sorted(registered)


def listed_json(settings, sets: tuple[str, ...]) -> tuple[list, str]:
    """The tools of `sets` and their tools/list JSON, as a client receives it."""
    from mcp.types import ListToolsResult

    settings.WINNI_MCP_TOOLSETS = sets
    tools = asyncio.run(assembly.build_mcp_server().list_tools())
    return tools, ListToolsResult(tools=tools).model_dump_json(by_alias=True, exclude_none=True)


# What each set's tools/list costs every session's model, in characters (≈ 4 a token; README and
# docs/benchmarks.md give the figures): budgets, so that a new tool or a longer description is a
# decision. The default set's is well within the issue's ≤ 2,500 tokens (10,000 characters).
SET_BUDGETS = {"default": 9_000, "conversations": 2_800, "contexts": 1_100, "fiedler": 1_900, "cache": 2_100,
               "delete": 750}


def test_the_default_set_is_what_an_agent_uses_in_a_session(settings):
    tools, listed = listed_json(settings, ("default",))
    assert sorted(tool.name for tool in tools) == sorted([
        "winni_recall", "winni_get", "dewey_search", "dewey_get_conversation", "store_memory", "update_memory",
        "search_memory", "memory_history", "medallion_load_for_scope", "medallion_get",
        "medallion_checkpoint_session", "medallion_job_status", "winni_context", "winni_projects",
        "dewey_get_startup_context", "winni_item_confirm"])
    assert len(listed) <= SET_BUDGETS["default"], len(listed)
    _, default_and_more = listed_json(settings, ("default", "fiedler", "delete"))
    names = {tool["name"] for tool in json.loads(default_and_more)["tools"]}
    assert {"dewey_store_fiedler_result", "dewey_delete_conversation", "winni_recall"} <= names
    assert "librarian_remember" not in names and "dewey_store_message" not in names


def test_each_sets_tools_list_keeps_its_budget(settings):
    from winni_site.toolsets import TOOLSETS

    assert set(SET_BUDGETS) == set(TOOLSETS)
    for name, budget in SET_BUDGETS.items():
        _, listed = listed_json(settings, (name,))
        assert len(listed) <= budget, (name, len(listed))


def _loose_parts(schema, where: str):
    """Where a schema leaves a value's type open (`{}` or `true`, a missing type, `$ref`): what
    strict checks (the MCP Inspector's --strict, Claude Code's own) refuse."""
    if isinstance(schema, bool) or schema == {}:
        yield f"{where}: an untyped schema"
        return
    assert isinstance(schema, dict), where
    if "$ref" in schema or "$defs" in schema:
        yield f"{where}: a reference"
    if "type" not in schema and "anyOf" not in schema and "enum" not in schema:
        yield f"{where}: no type"
    for key, value in schema.get("properties", {}).items():
        yield from _loose_parts(value, f"{where}.{key}")
    if "items" in schema:
        yield from _loose_parts(schema["items"], f"{where}[]")
    for number, option in enumerate(schema.get("anyOf", [])):
        yield from _loose_parts(option, f"{where}|{number}")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _loose_parts(extra, f"{where}{{}}")


def test_every_tools_schema_passes_strict_checks(settings):
    """Each inputSchema is a valid JSON Schema (2020-12, the MCP spec's dialect) whose every value
    has a type; a description is one paragraph without the docstring's indentation."""
    import jsonschema

    from winni_site.toolsets import TOOLSETS

    tools, _ = listed_json(settings, tuple(TOOLSETS))
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["type"] == "object" and tool.output_schema is None, tool.name
        assert list(_loose_parts(tool.input_schema, tool.name)) == [], tool.name
        assert tool.description and "\n" not in tool.description and "  " not in tool.description, tool.name
    assert list(_loose_parts({"type": "object", "properties": {"x": {"items": {}, "type": "array"}}}, "t")) == [
        "t.x[]: an untyped schema"]


def test_an_unknown_set_stops_start_up_naming_the_sets():
    import os
    import subprocess
    import sys

    from django.core.exceptions import ImproperlyConfigured

    from tests.support import ROOT
    from winni_site.toolsets import TOOLSETS, parse_toolsets

    assert parse_toolsets(["all"]) == tuple(TOOLSETS) and parse_toolsets([" Default ", "cache"]) == ("default", "cache")
    with pytest.raises(ImproperlyConfigured, match="no tool set named 'fiedlr'; the sets are default") as error:
        parse_toolsets(["default", "fiedlr"])
    assert all(name in str(error.value) for name in TOOLSETS)
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "WINNI_MCP_TOOLSETS": "default,fiedlr"}, timeout=120)
    assert result.returncode != 0 and "no tool set named 'fiedlr'" in result.stderr


@pytest.mark.live
def test_a_token_limited_to_a_set_sees_and_calls_only_its_tools(winni_server, transactional_db):
    from core.errors import InvalidInput
    from tests.support import McpClient
    from winni_site import auth
    from winni_site.toolsets import TOOLSETS

    _, secret = auth.token_create(name="session-bot", toolsets=["default"])
    client = McpClient(winni_server.url, secret)
    assert sorted(client.list_tools()) == sorted(TOOLSETS["default"][1])
    assert client.call("winni_recall", {"query": "anything"})["results"] == []
    assert client.call_error("dewey_store_fiedler_result", {"correlation_id": "c", "model": "m", "output": "x"}) == (
        "forbidden: the tool dewey_store_fiedler_result is in the tool set 'fiedler'; this token (session-bot) may "
        "use the tool sets default (a token for it: `./winni manage winni_token create NAME --toolset fiedler`)")
    _, every = auth.token_create(name="every-set")
    assert "dewey_store_fiedler_result" in McpClient(winni_server.url, every).list_tools()
    with pytest.raises(InvalidInput, match="^toolsets: no tool set named 'fiedlr'; the sets are default"):
        auth.token_create(name="typo", toolsets=["fiedlr"])
