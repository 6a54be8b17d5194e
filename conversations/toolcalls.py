"""A stored tool call as one line a person can read (issue #44.3).

Capture keeps a tool message's content as JSON (agents/capture.py): a hook's
`{"tool_name", "tool_input", "tool_response"}`, a transcript's `{"tool_use", "id", "input"}` and
`{"tool_result", "tool_use_id", "is_error"}`, Codex's `{"tool_call", "namespace", "call_id",
"input"}`, the MCP proxy's `{"tool", "arguments"}` and `{"tool", "result"}`. The stored content
keeps that JSON (it is searched and embedded, and the admin shows it
raw); what a block, a search hit or a transcript shows is `tool_line(content)`:

    Edit src/invoice.py: `total = float(x)` → `total_cents = int(x)`
    Bash `pytest -q`: 3 failed, 41 passed
    Read src/invoice.py (lines 10–60 of 240)

Paths are shown relative to the session's working directory when it is known, and every line is
at most LINE_MAX characters. A content cut by the capture limit is no longer JSON: its tool name
and first arguments are still read from the text."""
from __future__ import annotations

import json
import posixpath
import re
from typing import Any

LINE_MAX = 240
# Characters of one quoted fragment (a command, an edit's old or new text, a pattern).
FRAGMENT_MAX = 80
# The arguments that say most about an unknown tool's call, best first.
TELLING = ("command", "cmd", "file_path", "notebook_path", "path", "absolute_path", "pattern", "query", "url",
           "prompt", "description", "name", "id", "dir_path", "directory")
# Tools of other agents that are a shell, a file read, a file write or an edit.
SHELL = {"Bash", "run_shell_command", "shell", "exec_command", "local_shell", "local_shell_call", "bash"}
READ = {"Read", "read_file", "view"}
WRITE = {"Write", "write_file", "create"}
EDIT = {"Edit", "replace", "str_replace", "edit"}
_SUMMARY = re.compile(r"\b\d+ (?:failed|passed|errors?|error|skipped|xfailed|xpassed|warnings?|deselected|tests?)\b",
                      re.IGNORECASE)
_EXIT = re.compile(r"(?:exit(?:ed)?(?: with)?(?: code| status)?|Exit code)[: ]+(-?\d+)", re.IGNORECASE)
_STRING_FIELD = r'"{key}"\s*:\s*"((?:[^"\\]|\\.)*)'


def tool_line(content: Any, *, cwd: str | None = None, limit: int = LINE_MAX) -> str | None:
    """`content` (a stored tool message) as one readable line of at most `limit` characters; None
    when it is not a tool call or result Winni stores (the caller shows the text as it is)."""
    body = _body(content)
    if body is None:
        return None
    call = _call_parts(body)
    if call is not None:
        line = _call(*call, cwd)
    elif "tool_result" in body:
        line = _result(body.get("tool_result"), bool(body.get("is_error")))
    elif isinstance(body.get("tool"), str) and "result" in body:  # the MCP proxy: its result
        result = body.get("result")
        is_error = isinstance(result, dict) and bool(result.get("isError"))
        line = f"{body['tool']} → " + _result(result, is_error).replace("Tool result: ", "", 1)
    else:
        return None
    return _bounded(line, limit)


def tool_call(content: Any) -> tuple[str, dict[str, Any], Any] | None:
    """A stored tool message's call as (tool name, arguments, response or None), from any shape
    capture stores (a cut content: the name and first string arguments it still shows); None for a
    result alone or any other text. What a session digest reads its files and commands from, and
    anchors the files a call changes."""
    body = _body(content)
    return None if body is None else _call_parts(body)


def _body(content: Any) -> dict[str, Any] | None:
    """A stored tool message's JSON object (what a cut one still shows: _partial); None for text."""
    if not isinstance(content, str) or not content.lstrip().startswith("{"):
        return None
    try:
        body = json.loads(content)
    except ValueError:
        body = _partial(content)
    return body if isinstance(body, dict) else None


# (name key, arguments key) of each shape of a call: a hook's, a transcript's, Codex's, the MCP proxy's.
_CALL_KEYS = (("tool_name", "tool_input"), ("tool_use", "input"), ("tool_call", "input"), ("tool", "arguments"))


def _call_parts(body: dict[str, Any]) -> tuple[str, dict[str, Any], Any] | None:
    for name_key, args_key in _CALL_KEYS:
        if isinstance(body.get(name_key), str) and (name_key != "tool" or args_key in body):
            # Only a hook's call carries its response beside it.
            response = body.get("tool_response") if name_key == "tool_name" else None
            return body[name_key], _input(body.get(args_key)), response
    return None


# --- the shapes ------------------------------------------------------------------------------------


def _call(name: str, args: dict[str, Any], response: Any, cwd: str | None) -> str:
    def path(*keys: str) -> str:
        value = next((args[key] for key in keys if isinstance(args.get(key), str) and args[key]), "")
        return _relative(value, cwd) if value else "?"

    if name in SHELL:
        command = args.get("command", args.get("cmd", ""))
        if isinstance(command, list):
            command = " ".join(str(part) for part in command)
            command = command.removeprefix("bash -lc ").removeprefix("bash -c ")
        line = f"{name} {_quoted(str(command))}"
        outcome = _shell_outcome(response)
        return f"{line}: {outcome}" if outcome else line
    if name in READ:
        line = f"{name} {path('file_path', 'absolute_path', 'path')}"
        return line + _read_range(args, response)
    if name in EDIT:
        old, new = args.get("old_string", args.get("old_str", "")), args.get("new_string", args.get("new_str", ""))
        every = " (every occurrence)" if args.get("replace_all") else ""
        return f"{name} {path('file_path', 'path')}: {_quoted(str(old))} → {_quoted(str(new))}{every}"
    if name == "MultiEdit":
        edits = [edit for edit in args.get("edits") or [] if isinstance(edit, dict)]
        line = f"MultiEdit {path('file_path')}: {len(edits)} edit{'s' if len(edits) != 1 else ''}"
        if edits:
            first = edits[0]
            line += f", {_quoted(str(first.get('old_string', '')))} → {_quoted(str(first.get('new_string', '')))}"
            line += " …" if len(edits) > 1 else ""
        return line
    if name in WRITE:
        text = args.get("content", args.get("file_text", ""))
        lines = len(str(text).splitlines())
        done = response.get("type") if isinstance(response, dict) else None
        verb = {"create": "created", "update": "replaced"}.get(str(done), "")
        return f"{name} {path('file_path', 'path')}: {verb + ', ' if verb else ''}{lines} line{'s' if lines != 1 else ''}"
    if name == "NotebookEdit":
        cell = args.get("cell_id") or args.get("cell_number")
        mode = args.get("edit_mode") or "replace"
        where = f" cell {cell}" if cell is not None else ""
        return f"NotebookEdit {path('notebook_path')}{where} ({mode}): {_quoted(str(args.get('new_source', '')))}"
    if name == "Grep":
        line = f"Grep {_quoted(str(args.get('pattern', '')))}"
        if args.get("path"):
            line += f" in {_relative(str(args['path']), cwd)}"
        if args.get("glob"):
            line += f" ({args['glob']})"
        return line + _count(response, "numFiles", "file", "numLines", "line")
    if name == "Glob":
        line = f"Glob {_quoted(str(args.get('pattern', '')))}"
        if args.get("path"):
            line += f" in {_relative(str(args['path']), cwd)}"
        return line + _count(response, "numFiles", "file")
    if name in ("Task", "Agent"):
        kind = args.get("subagent_type")
        return f"{name}{f' ({kind})' if kind else ''}: {_flat(str(args.get('description') or args.get('prompt', '')))}"
    if name == "WebFetch":
        line = f"WebFetch {args.get('url', '?')}"
        if isinstance(response, dict) and response.get("code"):
            line += f": {response['code']} {response.get('codeText', '')}".rstrip()
        return line
    if name == "WebSearch":
        return f"WebSearch {_quoted(str(args.get('query', '')))}"
    if name == "TodoWrite":
        todos = [todo for todo in args.get("todos") or [] if isinstance(todo, dict)]
        done = sum(1 for todo in todos if todo.get("status") == "completed")
        line = f"TodoWrite: {len(todos)} item{'s' if len(todos) != 1 else ''}, {done} done"
        working = next((todo for todo in todos if todo.get("status") == "in_progress"), None)
        return line + (f"; now: {_flat(str(working.get('content', '')))}" if working else "")
    if name.startswith("mcp__"):
        server, _, tool = name.removeprefix("mcp__").partition("__")
        return _telling(f"{tool or server} (MCP {server})", args, cwd)
    return _telling(name, args, cwd)


def _telling(title: str, args: dict[str, Any], cwd: str | None) -> str:
    """An unknown tool: its name and its most telling argument."""
    key = next((key for key in TELLING if args.get(key) not in (None, "", [], {})), None)
    if key is None:  # a word says more than a number
        key = next((key for key, value in args.items() if isinstance(value, str) and value.strip()), None)
    if key is None:
        key = next((key for key, value in args.items() if isinstance(value, (int, float))), None)
    if key is None:
        return title
    value = args[key]
    if isinstance(value, list):
        value = " ".join(str(part) for part in value)
    value = str(value)
    if "path" in key or key in ("file", "directory"):
        return f"{title} {_relative(value, cwd)}"
    return f"{title} {key}: {_quoted(value)}"


def _result(result: Any, is_error: bool) -> str:
    """A transcript's tool result, which names no tool (its call is the message before)."""
    text = _text_of(result)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    lines = len(text.splitlines())
    shown = _flat(first) or "(no output)"
    more = f" (+{lines - 1} line{'s' if lines > 2 else ''})" if lines > 1 else ""
    return f"{'Tool error' if is_error else 'Tool result'}: {shown}{more}"


def _shell_outcome(response: Any) -> str:
    """A shell call's result in a few words: a test run's tally, an exit code, else its last line."""
    if response is None:
        return ""
    if isinstance(response, dict):
        stdout, stderr = _text_of(response.get("stdout", response.get("output", ""))), _text_of(response.get("stderr"))
        code = response.get("exit_code", response.get("returnCode", response.get("exitCode")))
        interrupted = response.get("interrupted")
    else:
        stdout, stderr, code, interrupted = _text_of(response), "", None, False
    both = "\n".join(part for part in (stdout, stderr) if part)
    tally = [line for line in both.splitlines() if len(_SUMMARY.findall(line)) >= 1]
    parts = []
    if tally:
        parts.append(", ".join(match.group(0) for match in _SUMMARY.finditer(tally[-1])))
    if code is None and (found := _EXIT.search(both)):
        code = found.group(1)
    if code not in (None, 0, "0"):
        parts.append(f"exit {code}")
    if interrupted:
        parts.append("interrupted")
    if not parts:
        lines = [line.strip() for line in (stdout or stderr).splitlines() if line.strip()]
        shown = _flat(lines[-1], FRAGMENT_MAX) if lines else "no output"
        parts.append(f"{len(lines)} lines, last {_quoted(lines[-1])}" if len(lines) > 1 else shown)
    return "; ".join(parts)


def _read_range(args: dict[str, Any], response: Any) -> str:
    file = response.get("file") if isinstance(response, dict) else None
    if isinstance(file, dict) and isinstance(file.get("numLines"), int):
        start = int(file.get("startLine") or 1)
        end = start + max(file["numLines"] - 1, 0)
        total = file.get("totalLines")
        if start == 1 and total == file["numLines"]:
            return f" ({total} lines)"
        return f" (lines {start}–{end}{f' of {total}' if total else ''})"
    offset, count = args.get("offset"), args.get("limit")
    if isinstance(offset, int) and isinstance(count, int):
        return f" (lines {offset}–{offset + count - 1})"
    return ""


def _count(response: Any, key: str, noun: str, alt: str = "", alt_noun: str = "") -> str:
    if not isinstance(response, dict):
        return ""
    if response.get("mode") == "content" and alt and isinstance(response.get(alt), int):
        key, noun = alt, alt_noun
    value = response.get(key)
    if not isinstance(value, int):
        return ""
    return f": {value} {noun}{'s' if value != 1 else ''}"


# --- small helpers -----------------------------------------------------------------------------------


def _input(value: Any) -> dict[str, Any]:
    """A call's arguments as a dict (Codex sends them as a JSON string; a shell's may be a list)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"command": value}
    if isinstance(value, list):
        return {"command": value}
    return value if isinstance(value, dict) else {}


def _partial(content: str) -> dict[str, Any] | None:
    """What a cut (no longer parseable) tool message still says: its name and first string
    arguments, read from the text."""
    for name_key, args_key in (("tool_name", "tool_input"), ("tool_use", "input"), ("tool_call", "input")):
        name = _string_field(content, name_key)
        if name is not None:
            args = {key: value for key in TELLING + ("old_string", "new_string", "content")
                    if (value := _string_field(content, key)) is not None}
            return {name_key: name, args_key: args}
    if '"tool_result"' in content:
        return {"tool_result": _string_field(content, "tool_result") or "", "is_error": False}
    return None


def _string_field(content: str, key: str) -> str | None:
    found = re.search(_STRING_FIELD.format(key=re.escape(key)), content)
    if found is None:
        return None
    raw = found.group(1)
    try:
        return json.loads(f'"{raw}"')
    except ValueError:  # cut inside an escape
        return raw.replace("\\n", "\n").replace('\\"', '"')


def _text_of(value: Any) -> str:
    """A result's text: a string, or the text blocks of a list of content blocks."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text_of(item.get("text") if isinstance(item, dict) else item) for item in value)
    if isinstance(value, dict):
        for key in ("text", "content", "output", "result", "stdout"):
            if key in value:
                return _text_of(value[key])
    return json.dumps(value, ensure_ascii=False)


def _relative(path: str, cwd: str | None) -> str:
    """`path` relative to the session's working directory when it lies inside it."""
    if cwd and path.startswith("/"):
        base = cwd.rstrip("/") or "/"
        if path == base:
            return "."
        if path.startswith(base + "/"):
            return posixpath.relpath(path, base)
    return path


def _flat(text: str, limit: int = FRAGMENT_MAX) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _quoted(text: str) -> str:
    return f"`{_flat(text).replace('`', chr(39))}`"


def _bounded(line: str, limit: int) -> str:
    line = " ".join(line.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
