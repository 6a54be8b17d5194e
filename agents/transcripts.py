"""Backfill the sessions other coding agents keep on disk: Codex CLI's rollout files
(~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl), Gemini CLI's saved chats
(~/.gemini/tmp/<project>/chats/*.json[l]) and Copilot CLI's session events
(~/.copilot/session-state/<session>/events.jsonl); Claude Code's JSONL transcripts keep their own
parser (agents.capture). Each file becomes one conversation per session, metadata.source
"<agent source>-transcript" (codex-transcript, gemini-cli-transcript, copilot-cli-transcript,
claude-code-transcript).

Idempotent like the Claude Code import: every message carries a key made from its line (Codex:
the line's hash; Gemini: the message id), and a key already stored is skipped. Malformed lines
are counted and skipped."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings

from agents import capture
from agents.capture import ImportStats, TranscriptMessage, cap_text
from agents.dialects import CLAUDE, CODEX, COPILOT, GEMINI, SOURCES, strip_hook_context
from core.errors import InvalidInput

TRANSCRIPT_SOURCES = {agent: f"{SOURCES[agent]}-transcript" for agent in (CLAUDE, CODEX, GEMINI, COPILOT)}
IMPORTABLE = tuple(TRANSCRIPT_SOURCES)


def default_folder(agent: str) -> Path:
    """Where the agent keeps its sessions (CODEX_HOME and GEMINI_CLI_HOME are honoured)."""
    home = Path.home()
    if agent == CODEX:
        return Path(os.environ.get("CODEX_HOME") or home / ".codex") / "sessions"
    if agent == GEMINI:
        return Path(os.environ.get("GEMINI_CLI_HOME") or home) / ".gemini" / "tmp"
    if agent == COPILOT:
        return Path(os.environ.get("COPILOT_HOME") or home / ".copilot") / "session-state"
    return home / ".claude" / "projects"


def transcript_files(agent: str, paths: list[str]) -> list[Path]:
    """The transcript files under each path (a file or a folder searched recursively); a missing
    path raises FileNotFoundError naming it."""
    patterns = {CODEX: ("rollout-*.jsonl",), GEMINI: ("*.json", "*.jsonl"), COPILOT: ("events.jsonl",),
                CLAUDE: ("*.jsonl",)}[agent]
    files: list[Path] = []
    for name in paths:
        path = Path(name).expanduser()
        if path.is_dir():
            found = sorted({p for pattern in patterns for p in path.rglob(pattern)})
            if agent == GEMINI:  # Gemini keeps other JSON (logs, checkpoints) beside its chats
                found = [p for p in found if p.parent.name == "chats"]
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"{name}: no such file or directory")
    return files


def _tool_text(body: dict[str, Any]) -> str:
    return cap_text(json.dumps(body, ensure_ascii=False, default=str), settings.WINNI_CAPTURE_TOOL_MAX_CHARS)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [part["text"] for part in content or [] if isinstance(part, dict) and isinstance(part.get("text"), str)]


# --- Codex CLI rollouts ------------------------------------------------------------------------


class CodexRollout:
    """Reads one rollout file's lines in order: {"timestamp", "type", "payload"}. The first line
    (session_meta) names the session and its working directory; `response_item` lines hold the
    conversation as the model saw it: user and assistant messages (the harness's own context
    blocks, which start with "<", and developer messages are not the user's words), function
    calls and their outputs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # rollout-<date>-<session id>.jsonl: the file name names the session when no meta line does.
        self.session_id = path.stem[-36:] if len(path.stem) > 36 else path.stem
        self.session_metadata: dict[str, Any] = {"transcript_path": str(path)}

    def __call__(self, line: Any, *, transcript_path: str = "") -> list[TranscriptMessage]:
        if not isinstance(line, dict) or not isinstance(line.get("type"), str):
            raise InvalidInput("a rollout line must be a JSON object with a type", field="line")
        payload = line.get("payload")
        if not isinstance(payload, dict):
            raise InvalidInput("line.payload must be a JSON object", field="line.payload")
        if line["type"] == "session_meta":
            session = payload.get("id") or payload.get("session_id")
            if isinstance(session, str) and session:
                self.session_id = session
            git = found_git if isinstance(found_git := payload.get("git"), dict) else {}
            self.session_metadata.update(cwd=payload.get("cwd"), git_branch=git.get("branch"),
                                         codex_version=payload.get("cli_version"))
            return []
        if line["type"] != "response_item":
            return []
        found: list[tuple[str, str, str]] = []
        kind = payload.get("type")
        if kind == "message" and payload.get("role") in ("user", "assistant"):
            role = payload["role"]
            found = [(role, text, "text") for text in _texts(payload.get("content"))
                     if text.strip() and not (role == "user" and text.lstrip().startswith("<"))]
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            body = {"tool_call": payload.get("name"), "namespace": payload.get("namespace"),
                    "call_id": payload.get("call_id"),
                    "input": payload.get("arguments", payload.get("input", payload.get("action")))}
            found = [("tool", _tool_text(body), kind)]
        elif kind in ("function_call_output", "custom_tool_call_output"):
            found = [("tool", _tool_text({"tool_result": payload.get("output"), "call_id": payload.get("call_id")}),
                      kind)]
        digest = hashlib.sha1(json.dumps(line, sort_keys=True).encode()).hexdigest()[:24]
        created = line.get("timestamp") if isinstance(line.get("timestamp"), str) else None
        return [
            TranscriptMessage(session_id=self.session_id, key=f"codex:{digest}:{index}", role=role, content=content,
                              metadata={"block_type": block, "line_type": kind}, created_at=created,
                              session_metadata=dict(self.session_metadata))
            for index, (role, content, block) in enumerate(found)
        ]


# --- Gemini CLI chats ----------------------------------------------------------------------------


def gemini_chat_lines(text: str) -> list[str]:
    """Gemini CLI 0.61 writes a chat as JSON lines: a header ({sessionId, projectHash, ...}), then
    messages ({id, timestamp, type, content, toolCalls?}) and updates ({"$set": {...}}, which may
    carry a list of messages); older versions wrote one JSON document {sessionId, messages: [...]}.
    Either way: one line per message (or update), each with its session's header."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            document = json.loads(stripped)
        except ValueError:
            document = None
        if isinstance(document, dict) and isinstance(document.get("messages"), list):
            head = {k: v for k, v in document.items() if k != "messages"}
            return [json.dumps({"session": head, "message": m}) for m in document["messages"]]
    lines, head = [], {}
    for raw in text.splitlines():
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except ValueError:
            lines.append(raw)  # counted as malformed
            continue
        if isinstance(item, dict) and "sessionId" in item and "type" not in item:
            head = item
            continue
        update = item.get("$set") if isinstance(item, dict) else None
        if isinstance(update, dict):
            found = listed if isinstance(listed := update.get("messages"), list) else []
            lines += [json.dumps({"session": head, "message": m}) for m in found]
            if not found:
                lines.append(json.dumps({"session": head, "update": update}))
            continue
        lines.append(json.dumps({"session": head, "message": item}))
    return lines


class GeminiChat:
    """One Gemini CLI chat message ({"id", "timestamp", "type": "user"|"gemini"|..., "content",
    "toolCalls"}) with its session's header. The project's folder is in `.project_root` beside
    the chats folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.cwd: str | None = (path.parent.parent / ".project_root").read_text(encoding="utf-8").strip() or None
        except OSError:
            self.cwd = None

    def __call__(self, line: Any, *, transcript_path: str = "") -> list[TranscriptMessage]:
        if isinstance(line, dict) and "update" in line:
            return []
        if not isinstance(line, dict) or not isinstance(line.get("message"), dict):
            raise InvalidInput("a chat line must hold a message object", field="line")
        session, message = line.get("session") or {}, line["message"]
        session_id = session.get("sessionId") if isinstance(session, dict) else None
        if not isinstance(session_id, str) or not session_id:
            raise InvalidInput("the chat names no sessionId", field="sessionId")
        kind = message.get("type")
        if not isinstance(kind, str):
            raise InvalidInput("message.type is missing", field="message.type")
        found: list[tuple[str, str, str]] = []
        if kind in ("user", "gemini", "model"):
            role = "user" if kind == "user" else "assistant"
            content = message.get("content")
            texts = [content] if isinstance(content, str) else _texts(content)
            # The CLI's own context (<session_context>...) is not the user's words.
            if role == "user":
                texts = [strip_hook_context(t) for t in texts]
            text = "\n".join(t for t in texts if not (role == "user" and t.lstrip().startswith("<")))
            if text.strip():
                found.append((role, text, "text"))
            for call in message.get("toolCalls") or []:
                if isinstance(call, dict):
                    body = {"tool_call": call.get("name"), "id": call.get("id"), "input": call.get("args"),
                            "result": call.get("result"), "status": call.get("status")}
                    found.append(("tool", _tool_text(body), "tool_call"))
        ident = message.get("id") or hashlib.sha1(json.dumps(message, sort_keys=True).encode()).hexdigest()[:24]
        created = message.get("timestamp") if isinstance(message.get("timestamp"), str) else None
        metadata = {"transcript_path": str(self.path), "cwd": self.cwd, "project_hash": session.get("projectHash")}
        return [
            TranscriptMessage(session_id=session_id, key=f"gemini:{ident}:{index}", role=role, content=content,
                              metadata={"block_type": block, "line_type": kind}, created_at=created,
                              session_metadata=metadata)
            for index, (role, content, block) in enumerate(found)
        ]


# --- Copilot CLI session events ------------------------------------------------------------------


class CopilotEvents:
    """One line of a Copilot CLI session's events.jsonl ({"id", "timestamp", "type", "data"}):
    session.start names the session and its folder, user.message and assistant.message hold the
    words (an assistant message's toolRequests are the tool calls), tool.execution_complete the
    results."""

    def __init__(self, path: Path) -> None:
        self.session_id = path.parent.name  # session-state/<session id>/events.jsonl
        self.session_metadata: dict[str, Any] = {"transcript_path": str(path)}

    def __call__(self, line: Any, *, transcript_path: str = "") -> list[TranscriptMessage]:
        if not isinstance(line, dict) or not isinstance(line.get("type"), str):
            raise InvalidInput("an events line must be a JSON object with a type", field="line")
        data = line.get("data")
        if not isinstance(data, dict):
            raise InvalidInput("line.data must be a JSON object", field="line.data")
        kind = line["type"]
        if kind == "session.start":
            if isinstance(data.get("sessionId"), str) and data["sessionId"]:
                self.session_id = data["sessionId"]
            context = found_context if isinstance(found_context := data.get("context"), dict) else {}
            self.session_metadata.update(cwd=context.get("cwd"), git_branch=context.get("branch"),
                                         copilot_version=data.get("copilotVersion"))
            return []
        found: list[tuple[str, str, str]] = []
        if kind in ("user.message", "assistant.message"):
            role = "user" if kind == "user.message" else "assistant"
            if isinstance(data.get("content"), str) and data["content"].strip():
                found.append((role, data["content"], "text"))
            for call in data.get("toolRequests") or []:
                if isinstance(call, dict):
                    body = {"tool_call": call.get("name"), "id": call.get("toolCallId"), "input": call.get("arguments")}
                    found.append(("tool", _tool_text(body), "tool_request"))
        elif kind == "tool.execution_complete":
            result = found_result if isinstance(found_result := data.get("result"), dict) else {}
            body = {"tool_result": result.get("content", data.get("result")), "id": data.get("toolCallId"),
                    "success": data.get("success")}
            found.append(("tool", _tool_text(body), "tool_result"))
        ident = line.get("id") or hashlib.sha1(json.dumps(line, sort_keys=True).encode()).hexdigest()[:24]
        created = line.get("timestamp") if isinstance(line.get("timestamp"), str) else None
        return [
            TranscriptMessage(session_id=self.session_id, key=f"copilot:{ident}:{index}", role=role, content=content,
                              metadata={"block_type": block, "line_type": kind}, created_at=created,
                              session_metadata=dict(self.session_metadata))
            for index, (role, content, block) in enumerate(found)
        ]


def import_file(agent: str, path: Path) -> ImportStats:
    """Import one transcript file of `agent`, idempotently."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    if agent == CODEX:
        return capture.transcript_import_lines(text.splitlines(), transcript_path=str(path.resolve()),
                                               source=TRANSCRIPT_SOURCES[CODEX], parse=CodexRollout(path.resolve()))
    if agent == GEMINI:
        return capture.transcript_import_lines(gemini_chat_lines(text), transcript_path=str(path.resolve()),
                                               source=TRANSCRIPT_SOURCES[GEMINI], parse=GeminiChat(path.resolve()))
    if agent == COPILOT:
        return capture.transcript_import_lines(text.splitlines(), transcript_path=str(path.resolve()),
                                               source=TRANSCRIPT_SOURCES[COPILOT], parse=CopilotEvents(path.resolve()))
    return capture.transcript_import_lines(text.splitlines(), transcript_path=str(path.resolve()))
