"""The coding agents' hook dialects, mapped to one common hook event. Standard library only: the hook
program (agents/hook.py, run as `python3 -I -S`) imports it, and so does the server.

Claude Code, Codex CLI, Gemini CLI and GitHub Copilot CLI each pipe one JSON event to their hook
command, with their own event names and field names (docs/capture.md, "Other agents"). `normalize`
turns one of them into the common event Winni stores (Claude Code's shape: hook_event_name,
session_id, cwd, prompt, last_assistant_message, tool_name/tool_input/tool_response), and
`context_output` formats text for the agent to add to its context (SessionStart, and the prompt-time
context where the agent supports it) the way that agent reads its hook's stdout.

A newer agent's payload is captured as far as it is understood: fields normalize does not read are
kept raw in `unknown_fields` (each value cut to UNKNOWN_VALUE_CHARS), and a prompt that moved to
a new field or into a nested structure is still found (find_prompt). An event Winni does not
capture gives None; a payload that is not an event at all raises Unreadable (the hook logs it and
never fails the agent)."""
from __future__ import annotations  # annotations stay text: the hook imports no typing at start-up

import json
import os
import time

TYPE_CHECKING = False  # (mypy reads it as typing's; the hook does not import typing)
if TYPE_CHECKING:
    from typing import Any

CLAUDE, CODEX, GEMINI, COPILOT = "claude", "codex", "gemini", "copilot"
AGENTS = (CLAUDE, CODEX, GEMINI, COPILOT)
# metadata.source of the conversations each agent's hooks write.
SOURCES = {CLAUDE: "claude-code", CODEX: "codex", GEMINI: "gemini-cli", COPILOT: "copilot-cli"}
COMMON_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd")

# Each agent's event name → the common event. Events not listed are not captured.
EVENTS = {
    CLAUDE: {name: name for name in COMMON_EVENTS},
    # Codex has no SessionEnd hook.
    CODEX: {name: name for name in COMMON_EVENTS if name != "SessionEnd"},
    # Gemini CLI fires PreCompress on every turn (0.61.0, headless), not only before a compression:
    # it is not taken as a checkpoint; SessionEnd is.
    GEMINI: {
        "SessionStart": "SessionStart",
        "BeforeAgent": "UserPromptSubmit",
        "AfterTool": "PostToolUse",
        "AfterAgent": "Stop",
        "SessionEnd": "SessionEnd",
    },
    # Copilot names its events in camelCase (fields camelCase too) or, in its "VS Code compatible"
    # form, in PascalCase (fields snake_case, as Claude Code's). Both are read.
    COPILOT: {
        "sessionStart": "SessionStart", "SessionStart": "SessionStart",
        "userPromptSubmitted": "UserPromptSubmit", "UserPromptSubmit": "UserPromptSubmit",
        "postToolUse": "PostToolUse", "PostToolUse": "PostToolUse",
        "agentStop": "Stop", "Stop": "Stop",
        "preCompact": "PreCompact", "PreCompact": "PreCompact",
        "sessionEnd": "SessionEnd", "SessionEnd": "SessionEnd",
    },
}
# The events the installer registers for each agent, in the agent's own names (Copilot: the
# PascalCase form, whose payloads carry hook_event_name and session_id).
INSTALLED_EVENTS = {
    CLAUDE: list(EVENTS[CLAUDE]),
    CODEX: list(EVENTS[CODEX]),
    GEMINI: list(EVENTS[GEMINI]),
    COPILOT: ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd"],
}
SESSION_START_SOURCES = ("startup", "resume", "clear", "compact")
# How much of the end of a transcript is read to find the last reply (Copilot's Stop carries none).
TRANSCRIPT_TAIL_BYTES = 2 * 1024 * 1024
# How long the hook waits for Copilot to write a turn's final message (its hook timeout is 10 s).
TRANSCRIPT_WAIT_SECONDS = 5.0


# Gemini CLI's file tools under the names of Claude Code's (which Copilot CLI uses too): the hook
# asks automatic recall about the file they touch (agents/hook.py's FILE_TOOLS). The agent's own name
# is kept (agent_tool_name).
TOOL_NAMES = {GEMINI: {"read_file": "Read", "write_file": "Write", "replace": "Edit"}}

# The fields normalize reads, in every agent's spelling: the rest of a payload is kept raw.
READ_FIELDS = {"hook_event_name", "hookEventName", "session_id", "sessionId", "cwd", "transcript_path",
               "transcriptPath"}
EVENT_FIELDS = {
    "SessionStart": {"source"},
    "UserPromptSubmit": {"prompt"},
    "Stop": {"last_assistant_message", "prompt_response", "response"},
    "PostToolUse": {"tool_name", "toolName", "tool_input", "toolArgs", "tool_args", "tool_response", "tool_result",
                    "toolResult", "tool_use_id", "toolUseId", "tool_call_id", "toolCallId"},
}
# Unknown fields ride along with the event (one hook request): each value is cut to this many
# characters of JSON, and fields past UNKNOWN_TOTAL_CHARS are named but not kept.
UNKNOWN_VALUE_CHARS = 2000
UNKNOWN_TOTAL_CHARS = 8000
# Where a newer agent may put the prompt's text, and the keys that hold text inside a structure
# ({"prompt": {"text": ...}}, {"message": {"content": [{"type": "text", "text": ...}]}}).
PROMPT_FIELDS = ("prompt", "user_prompt", "userPrompt", "input", "message", "text", "query", "content")
TEXT_KEYS = ("text", "content", "prompt", "value", "message", "parts")
# An event of an unknown name is taken as a prompt only for these fields (Claude Code's
# Notification, say, has a `message` that is not the user's).
UNKNOWN_EVENT_PROMPT_FIELDS = ("prompt", "user_prompt", "userPrompt")


class Unreadable(ValueError):
    """The payload is not a hook event of that agent (not JSON, not an object, no session id)."""


def _first(payload: dict, *names: str) -> object:
    for name in names:
        if payload.get(name) is not None:
            return payload[name]
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _maybe_json(value: object) -> object:
    """Copilot passes tool arguments as a JSON string in its camelCase form."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def prompt_text(value: object, depth: int = 0) -> str | None:
    """The text a prompt value holds: the string itself, or the text parts of a structure (joined
    by line breaks); None when it holds no text."""
    if isinstance(value, str):
        return value if value.strip() else None
    if depth > 6:
        return None
    if isinstance(value, list):
        texts = [text for text in (prompt_text(item, depth + 1) for item in value) if text]
        return "\n".join(texts) if texts else None
    if isinstance(value, dict):
        for key in TEXT_KEYS:
            if key in value:
                found = prompt_text(value[key], depth + 1)
                if found:
                    return found
    return None


def find_prompt(payload: dict) -> tuple:
    """(the prompt's text, the field it was found in) for a payload whose `prompt` is not a plain
    string: a structure under `prompt`, or a newer field name (PROMPT_FIELDS). (None, None) when
    no field holds text."""
    for name in PROMPT_FIELDS:
        if name in payload:
            found = prompt_text(payload[name])
            if found:
                return found, name
    return None, None


def unknown_fields(payload: dict, common: str) -> dict:
    """The payload's fields that normalize does not read for the `common` event, raw (each cut
    to UNKNOWN_VALUE_CHARS characters of JSON; past UNKNOWN_TOTAL_CHARS only named, under "…")."""
    known = READ_FIELDS | EVENT_FIELDS.get(common, set())
    kept: dict = {}
    total = 0
    for key, value in payload.items():
        if key in known:
            continue
        text = json.dumps(value, ensure_ascii=False, default=str)
        if len(text) > UNKNOWN_VALUE_CHARS:
            value = text[:UNKNOWN_VALUE_CHARS] + f"… [{len(text) - UNKNOWN_VALUE_CHARS} more characters]"
            text = json.dumps(value, ensure_ascii=False)
        if total + len(text) > UNKNOWN_TOTAL_CHARS:
            kept.setdefault("…", []).append(str(key)[:100])
            continue
        kept[key] = value
        total += len(text)
    return kept


def parse(raw: str) -> dict:
    """The JSON object on the hook's stdin, or Unreadable."""
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise Unreadable(f"not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise Unreadable("not a JSON object")
    return payload


def event_name(agent: str, payload: dict, hint: object = None) -> object:
    """The agent's own name of the event: hook_event_name (hookEventName), else `hint` (the
    --event argument of the hook command: Copilot's camelCase payloads do not name their event)."""
    name = _first(payload, "hook_event_name", "hookEventName")
    return name if isinstance(name, str) and name else hint


def normalize(agent: str, payload: dict, hint: object = None, state_path: str = "") -> object:
    """The common event for one agent's payload, or None when Winni does not capture that event.
    Raises Unreadable when the payload has no event name or no session id. `state_path`: a file
    where the hook keeps each session's last prompt (Copilot's Stop needs it, see last_reply)."""
    if agent not in EVENTS:
        raise Unreadable(f"unknown agent {agent!r}")
    name = event_name(agent, payload, hint)
    if not isinstance(name, str):
        raise Unreadable("no hook_event_name (and no --event)")
    common = EVENTS[agent].get(name)
    if common is None and isinstance(hint, str) and hint in EVENTS[agent]:
        # The hook was installed for `hint` (--event): that is the event, whatever it is called now.
        common = EVENTS[agent][hint]
    unknown_event_prompt = None
    if common is None:
        # An event name this version does not know (a newer agent's): nothing Winni stores, unless
        # it carries a prompt, which is never lost: it is captured as a prompt.
        found, field = find_prompt({key: payload[key] for key in UNKNOWN_EVENT_PROMPT_FIELDS if key in payload})
        if found is None:
            return None
        common, unknown_event_prompt = "UserPromptSubmit", f"{field} of event {name}"[:100]
    session_id = _first(payload, "session_id", "sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise Unreadable("no session_id")
    event: dict[str, Any] = {
        "hook_event_name": common,
        "session_id": session_id,
        "cwd": _text(_first(payload, "cwd")),
        "transcript_path": _text(_first(payload, "transcript_path", "transcriptPath")),
    }
    if name != common:
        event["agent_event"] = name
    if common == "SessionStart":
        source = _first(payload, "source")
        event["source"] = source if source in SESSION_START_SOURCES else "startup"
    elif common == "UserPromptSubmit":
        prompt = _first(payload, "prompt")
        if unknown_event_prompt:
            prompt, _ = find_prompt({key: payload[key] for key in UNKNOWN_EVENT_PROMPT_FIELDS if key in payload})
            event["prompt_field"] = unknown_event_prompt
        elif not (isinstance(prompt, str) and prompt.strip()):
            # A newer shape: the text in a structure or another field (the server warns about it).
            found, field = find_prompt(payload)
            if found is not None:
                prompt = found
                event["prompt_field"] = field
        # A prompt of a shape with no text at all goes as it is: the server keeps it raw.
        event["prompt"] = prompt
        if agent == GEMINI and isinstance(event["prompt"], str):
            event["prompt"] = strip_hook_context(event["prompt"])
        if agent == COPILOT:
            remember_prompt(state_path, session_id, _text(event["prompt"]))
    elif common == "Stop":
        reply = _first(payload, "last_assistant_message", "prompt_response", "response")
        if reply is None and event["transcript_path"]:
            prompt = recall_prompts(state_path).get(session_id) if state_path else None
            reply = last_reply(agent, event["transcript_path"], prompt)
        event["last_assistant_message"] = _text(reply)
    elif common == "PostToolUse":
        event["tool_name"] = _text(_first(payload, "tool_name", "toolName"))
        common_name = TOOL_NAMES.get(agent, {}).get(event["tool_name"])
        if common_name:
            event["agent_tool_name"], event["tool_name"] = event["tool_name"], common_name
        event["tool_input"] = _maybe_json(_first(payload, "tool_input", "toolArgs", "tool_args"))
        event["tool_response"] = _first(payload, "tool_response", "tool_result", "toolResult")
        tool_use_id = _first(payload, "tool_use_id", "toolUseId", "tool_call_id", "toolCallId")
        if tool_use_id is not None:
            event["tool_use_id"] = str(tool_use_id)
    unknown = unknown_fields(payload, common)
    if unknown:
        event["unknown_fields"] = unknown
    return event


HOOK_CONTEXT_OPEN, HOOK_CONTEXT_CLOSE = "<hook_context>", "</hook_context>"


def strip_hook_context(prompt: str) -> str:
    """Gemini CLI (headless) puts the SessionStart hook's text before the user's prompt, in
    <hook_context>...</hook_context>, and hands BeforeAgent that combined prompt: the user's words
    are what follows."""
    text = prompt.lstrip()
    if text.startswith(HOOK_CONTEXT_OPEN) and HOOK_CONTEXT_CLOSE in text:
        return text.split(HOOK_CONTEXT_CLOSE, 1)[1].lstrip()
    return prompt


def _tail_lines(path: str) -> list:
    try:
        with open(os.path.expanduser(path), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            data = handle.read()
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[1:] if size > TRANSCRIPT_TAIL_BYTES else lines


def _reply_in(lines: list, prompt: object = None) -> tuple:
    """(final reply, any reply) of the last turn in Copilot events: the assistant messages after
    the last user message; the final one is a message that asks for no more tools. With `prompt`
    (the turn's prompt, from UserPromptSubmit), (None, None) until that prompt is the file's last
    user message: the CLI may not have written this turn yet."""
    messages: list = []
    last_user = None
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        data = found_data if isinstance(found_data := item.get("data"), dict) else {}
        if item.get("type") == "user.message":
            messages, last_user = [], data.get("content")
        elif item.get("type") == "assistant.message" and isinstance(data.get("content"), str):
            messages.append(data)
    if prompt is not None and last_user != prompt:
        return None, None
    said = [m for m in messages if m["content"].strip()]
    final = [m for m in said if not m.get("toolRequests")]
    return (final[-1]["content"] if final else None), (said[-1]["content"] if said else None)


def last_reply(agent: str, path: str, prompt: object = None, wait_seconds: float = TRANSCRIPT_WAIT_SECONDS) -> object:
    """The text of the last turn's reply in the agent's transcript file, for agents whose Stop
    event carries none (Copilot: events {"type": "assistant.message", "data": {"content"}}). The
    CLI may still be writing the turn (its prompt, its last message) when its Stop hook runs: the
    file is read again for up to `wait_seconds` until the turn's final message is there."""
    deadline = time.monotonic() + wait_seconds
    while True:
        final, said = _reply_in(_tail_lines(path), prompt)
        if final is not None or time.monotonic() >= deadline:
            return final if final is not None else said
        time.sleep(0.05)


# The last prompt of each session, for agents whose Stop event does not say which turn ended
# (Copilot): UserPromptSubmit remembers it, Stop looks for that turn in the transcript.
PROMPTS_KEPT = 200


def remember_prompt(state_path: str, session_id: str, prompt: object) -> None:
    if not state_path or not isinstance(prompt, str):
        return
    prompts = recall_prompts(state_path)
    prompts.pop(session_id, None)
    prompts[session_id] = prompt
    try:
        os.makedirs(os.path.dirname(state_path), exist_ok=True)
        temporary = f"{state_path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(dict(list(prompts.items())[-PROMPTS_KEPT:]), handle)
        os.replace(temporary, state_path)
    except OSError:
        pass


def recall_prompts(state_path: str) -> dict:
    try:
        with open(state_path, encoding="utf-8") as handle:
            prompts = json.load(handle)
    except (OSError, ValueError):
        return {}
    return prompts if isinstance(prompts, dict) else {}


def context_output(agent: str, event: str, text: str) -> str:
    """What the hook prints so the agent adds `text` to its context for the common `event`
    (SessionStart, UserPromptSubmit, or PostToolUse for file recall): plain text for Claude Code's
    SessionStart, else a JSON hookSpecificOutput (Claude Code, Codex, Gemini CLI), a JSON
    additionalContext for Copilot. Empty when there is nothing to add."""
    if not text:
        return ""
    if agent == CLAUDE and event == "SessionStart":
        return text  # a SessionStart hook's plain output joins the context
    if agent == COPILOT:
        return json.dumps({"additionalContext": text})
    own = event
    if agent == GEMINI:
        own = {"UserPromptSubmit": "BeforeAgent", "PostToolUse": "AfterTool"}.get(event, event)
    return json.dumps({"hookSpecificOutput": {"hookEventName": own, "additionalContext": text}})
