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
    # The published schema is the SDK's own, less pydantic's titles (they repeat the names).
    assert strict.parameters == core_mcp.untitled(loose.parameters) and "title" not in json.dumps(strict.parameters)
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
    structuredContent where the tool publishes an output schema (an Optional answer wrapped)."""
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


# --- tool sets (WINNI_MCP_TOOLSETS) --------------------------------------------------------------


def test_every_registered_tool_is_in_exactly_one_set():
    from winni_site.toolsets import TOOLSETS

    registered = [tool.__name__ for registry in assembly.registries() for tool in registry.tools]
    in_sets = [name for _, names in TOOLSETS.values() for name in names]
    assert sorted(in_sets) == sorted(registered)


def test_the_default_set_is_what_an_agent_uses_in_a_session(settings):
    from mcp.types import ListToolsResult

    settings.WINNI_MCP_TOOLSETS = ("default",)
    tools = asyncio.run(assembly.build_mcp_server().list_tools())
    assert sorted(tool.name for tool in tools) == sorted([
        "winni_recall", "dewey_search", "dewey_get_conversation", "store_memory", "update_memory", "search_memory",
        "memory_history", "medallion_load_for_scope", "medallion_get", "medallion_checkpoint_session",
        "medallion_job_status", "winni_context", "winni_projects", "dewey_get_startup_context", "librarian_ask",
        "winni_item_confirm"])
    listed = ListToolsResult(tools=tools).model_dump_json(by_alias=True, exclude_none=True)
    # What every session's model reads (README: 17,725 characters, ≈ 4,400 tokens; all 30 tools:
    # 40,809). A budget, so that a new default tool or a longer description is a decision: the
    # agent settles a possibly stale item in its session (winni_item_confirm, 695 characters).
    assert len(listed) <= 18_800, len(listed)
    settings.WINNI_MCP_TOOLSETS = ("default", "fiedler", "delete")
    names = {tool.name for tool in asyncio.run(assembly.build_mcp_server().list_tools())}
    assert {"dewey_store_fiedler_result", "dewey_delete_conversation", "winni_recall"} <= names
    assert "librarian_remember" not in names and "dewey_store_message" not in names


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
