"""What the transcript page shows of a tool turn: the tool's name, the command or target it was
given, and its output, read from the shapes capture stores (conversations never change them):

- Claude Code hook (PostToolUse): {"tool_name", "tool_input", "tool_response"}, metadata.tool_name
- transcript import: {"tool_use": name, "id", "input"} and {"tool_result", "tool_use_id", "is_error"}
  (the result names no tool: it is found through the call's id)
- MCP proxy: {"tool", "arguments"} for the call, {"tool", "result"} for its result
Anything else is shown as it is stored."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from conversations.toolcalls import tool_line

SUMMARY_CHARS = 160

# The input key that says what a well-known tool was asked to do, in order of preference.
TARGET_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt", "notebook_path")


@dataclass(frozen=True)
class ToolTurn:
    name: str
    target: str  # the command or file, on one line, trimmed ("" when there is none)
    input: str  # the whole input, pretty JSON ("" when none)
    output: str  # the output as text ("" when this turn is only the call)
    is_error: bool = False
    line: str = ""  # the call as one readable line, without its leading tool name (conversations.toolcalls)


def _loads(content: str) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return None


def _one_line(text: str, limit: int = SUMMARY_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _target(tool_input: Any) -> str:
    if isinstance(tool_input, dict):
        for key in TARGET_KEYS:
            value = tool_input.get(key)
            if isinstance(value, str) and value.strip():
                return _one_line(value)
        return _one_line(json.dumps(tool_input, ensure_ascii=False, default=str)) if tool_input else ""
    if isinstance(tool_input, str):
        return _one_line(tool_input)
    return ""


def _text(value: Any) -> str:
    """Tool output as text: strings as they are, content blocks' text joined, stdout/stderr of a
    shell result, anything else as pretty JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(block, dict) for block in value):
        texts = [text for block in value if isinstance(text := block.get("text"), str)]
        if texts:
            return "\n".join(texts)
    if isinstance(value, dict):
        if isinstance(value.get("content"), list):
            return _text(value["content"])
        streams = [stream for key in ("stdout", "stderr") if isinstance(stream := value.get(key), str) and stream]
        if streams:
            return "\n".join(streams)
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _pretty(value: Any) -> str:
    if value in (None, "", {}, []):
        return ""
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)


def tool_call_names(messages: list[Any]) -> dict[str, str]:
    """tool_use id → tool name, for the calls among these messages (so their results can say it)."""
    names = {}
    for message in messages:
        if message.role == "tool" and '"tool_use"' in message.content:
            body = _loads(message.content)
            if isinstance(body, dict) and isinstance(body.get("id"), str) and isinstance(body.get("tool_use"), str):
                names[body["id"]] = body["tool_use"]
    return names


def tool_turn(message: Any, names: dict[str, str] | None = None, cwd: str | None = None) -> ToolTurn:
    """The tool turn as the transcript shows it: folded under its name and readable line (paths
    relative to the session's `cwd`), the input and output inside."""
    turn = _tool_turn(message, names)
    line = tool_line(message.content, cwd=cwd) or ""
    if line.startswith(turn.name):
        line = line[len(turn.name):].lstrip(" :")
    elif turn.name.endswith(" result") and line.startswith(("Tool result: ", "Tool error: ")):
        line = line.split(": ", 1)[1]
    return ToolTurn(name=turn.name, target=turn.target, input=turn.input, output=turn.output,
                    is_error=turn.is_error, line=line)


def _tool_turn(message: Any, names: dict[str, str] | None = None) -> ToolTurn:
    metadata = message.metadata if isinstance(message.metadata, dict) else {}
    body = _loads(message.content)
    named = metadata.get("tool_name") or metadata.get("tool")
    if not isinstance(body, dict):
        return ToolTurn(name=str(named or "tool output"), target="", input="", output=message.content)
    if "tool_name" in body or "tool_input" in body:  # Claude Code hook
        return ToolTurn(name=str(body.get("tool_name") or named or "tool"), target=_target(body.get("tool_input")),
                        input=_pretty(body.get("tool_input")), output=_text(body.get("tool_response")))
    if "tool_use" in body:  # transcript: the call
        return ToolTurn(name=str(body.get("tool_use") or "tool"), target=_target(body.get("input")),
                        input=_pretty(body.get("input")), output="")
    if "tool_result" in body:  # transcript: the result
        name = (names or {}).get(str(body.get("tool_use_id")), "")
        return ToolTurn(name=f"{name} result" if name else "tool result", target="", input="",
                        output=_text(body.get("tool_result")), is_error=bool(body.get("is_error")))
    if "tool" in body and "arguments" in body:  # MCP proxy: the call
        return ToolTurn(name=str(body["tool"]), target=_target(body.get("arguments")),
                        input=_pretty(body.get("arguments")), output="")
    if "tool" in body and "result" in body:  # MCP proxy: the result
        result = body.get("result")
        is_error = bool(metadata.get("is_error") or (isinstance(result, dict) and result.get("isError")))
        return ToolTurn(name=f"{body['tool']} result", target="", input="", output=_text(result), is_error=is_error)
    return ToolTurn(name=str(named or "tool output"), target="", input="", output=_pretty(body))
