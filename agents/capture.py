"""Capture: Claude Code hook events, transcript lines and proxied MCP tool calls become messages in
one conversation per client session, each session in its project (core.projects resolves it from
what the session tells about its repository), and the SessionStart text (the active global startup
context, the project's active context, then the project's latest medallions) is built here.

This module spans apps, so it lives at the top (STYLE "Which way the imports run") and writes
through the conversations services (`conversation_begin`, `message_store`)."""
from __future__ import annotations

import contextvars
import fnmatch
import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction

from agents import autorecall, commits, hook
from agents import dialects as agent_dialects
from contexts import services as contexts
from conversations import services as conversations
from core import paths, projects
from core.connections import in_background, run_unchecked
from core.errors import ApplicationError, InvalidInput
from core.logs import storage_op
from core.models import Project
from core.redaction import Redacted, redact_json
from medallions import services as medallions

CLAUDE_CODE = "claude-code"
CLAUDE_TRANSCRIPT = "claude-code-transcript"
MCP_PROXY = "mcp-proxy"
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "PostToolUse", "PreCompact", "SessionEnd")
# Before the context is compacted and when the session ends, what was learnt becomes a medallion.
CHECKPOINT_EVENTS = ("PreCompact", "SessionEnd")
SESSION_START_SOURCES = ("startup", "resume", "clear", "compact")
# A session started from these no longer holds what automatic recall added: it may be added again.
RESET_SOURCES = ("compact", "clear")
TRUNCATED = "\n… [truncated by Winni: {dropped} more characters]"


log = logging.getLogger("winni.capture")


@dataclass(frozen=True)
class CaptureResult:
    stored: bool
    conversation_id: str | None = None
    message_id: str | None = None
    turn_number: int | None = None
    reason: str = ""
    checkpoint_job_id: str | None = None
    project_id: int | None = None  # the session's project (stored events)


def _require_str(payload: dict[str, Any], key: str, *, prefix: str = "payload") -> str:
    value = payload.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{prefix}.{key} must be a non-empty string", field=f"{prefix}.{key}")
    return value


def storable(value: Any) -> Any:
    """A string with its lone surrogates and NUL characters as U+FFFD (anything else as it is):
    capture keeps a prompt or a folder whose name holds bytes that are not UTF-8 rather than fail
    on it. Text already redacted stays marked so (the store would scan its JSON escapes again)."""
    if not isinstance(value, str):
        return value
    cleaned = paths.LONE_SURROGATE.sub("\ufffd", value).replace("\x00", "\ufffd")
    return Redacted(cleaned) if isinstance(value, Redacted) else cleaned


def cap_text(text: str, limit: int) -> str:
    """Cut text to `limit` characters, saying how much was dropped. A cut of redacted text stays
    marked as redacted (a prefix of text without secrets holds none), so the store does not scan
    it again."""
    if len(text) <= limit:
        return text
    cut = text[:limit] + TRUNCATED.format(dropped=len(text) - limit)
    return Redacted(cut) if isinstance(text, Redacted) else cut


def _advisory_lock(key: str) -> None:
    """Serialise find-or-create of one session's conversation until the transaction ends."""
    digest = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [digest])


# What a session's project is, asked only when its conversation is made (or has none yet): a
# session's project does not change, so an event of a known session costs no resolution.
ProjectOf = Callable[[], Project | None]


def session_conversation_find(*, source: str, session_id: str) -> Any:
    """The conversation of a client session, if it has one (with its project)."""
    return conversations.conversation_for_session(session_id=session_id, source=source)


def session_conversation(*, source: str, session_id: str, metadata: dict[str, Any] | None = None,
                         project: ProjectOf | None = None) -> Any:
    """The conversation of a client session (one per `source` and `session_id`), created on first
    use in the project `project()` names. Must run inside a transaction: the advisory lock keeps
    racing hooks from creating two."""
    _advisory_lock(f"{source}:{session_id}")
    conversation = session_conversation_find(source=source, session_id=session_id)
    if conversation is None:
        conversation = conversations.conversation_begin(
            session_id=session_id, metadata={"source": source, **(metadata or {})},
            project=project() if project else None,
        )
    elif conversation.project_id is None and project is not None:
        found = project()
        if found is not None:
            conversations.conversation_set_project(conversation=conversation, project=found)
    return conversation


def _valid_identity_parts(values: dict[str, Any]) -> dict[str, Any]:
    """The parts of a session's identity that are valid; capture keeps the event and drops a part
    it cannot use (a relative cwd, an unreadable remote) rather than lose the prompt."""
    kept = {}
    for name, value in values.items():
        value = storable(value)
        try:
            projects.Identity.of(**{name: value})
        except InvalidInput:
            continue
        kept[name] = value
    return kept


def session_identity(*, cwd: Any, repository: Any = None) -> projects.Identity:
    """What identifies a session's project: the repository the hook read (git root, origin remote,
    root commit), else — a client that sent none (an older hook, a transcript line) — the
    repository at `cwd` when that folder exists on this machine, else the working directory
    alone (Winni in a container does not see the user's folders: the nearest known git root above
    it, or the folder itself, identifies the project then)."""
    if repository is not None and not isinstance(repository, dict):
        raise InvalidInput("repository must be an object with git_root, remote and root_commit", field="repository")
    if repository is not None:
        unknown = sorted(set(repository) - {"git_root", "remote", "root_commit"})
        if unknown:
            raise InvalidInput(f"repository.{unknown[0]}: unknown key (git_root, remote, root_commit)",
                               field=f"repository.{unknown[0]}")
        values = {key: repository.get(key) for key in ("git_root", "remote", "root_commit")}
    elif isinstance(cwd, str) and os.path.isabs(cwd) and os.path.isdir(cwd):
        found = hook.repository(cwd)
        values = {key: found[key] for key in ("git_root", "remote", "root_commit")}
    else:
        values = {}
    return projects.Identity.of(**_valid_identity_parts({**values, "cwd": cwd}))


def session_project(*, cwd: Any, repository: Any = None, project: Any = None, create: bool = True) -> Project | None:
    """The project of a session: the one `project` names (slug, name or alias) when it names one,
    else the one its identity resolves to (made on first sight when `create`)."""
    if isinstance(project, str) and project.strip():
        named = projects.project_find(project.strip()[: projects.NAME_MAX])
        if named is not None:
            return named
    return projects.project_resolve(session_identity(cwd=cwd, repository=repository), create=create)


def store_in_session(
    *,
    source: str,
    session_id: str,
    role: str,
    content: str,
    metadata: dict[str, Any],
    dedupe_key: str | None = None,
    session_metadata: dict[str, Any] | None = None,
    created_at: Any = None,
    project: ProjectOf | None = None,
) -> CaptureResult:
    """Store one message into the session's conversation, in one transaction; a repeated
    `dedupe_key` (a retried hook event, a re-imported transcript line) stores nothing. Captured
    text is kept even when it holds NUL characters (PostgreSQL text cannot): they become U+FFFD."""
    content = storable(content)
    with transaction.atomic():
        conversation = session_conversation(source=source, session_id=session_id, metadata=session_metadata,
                                            project=project)
        if dedupe_key and conversations.message_id_with_metadata(conversation=conversation, key="capture_key",
                                                                  value=dedupe_key) is not None:
            return CaptureResult(stored=False, conversation_id=str(conversation.id), reason="duplicate")
        message = conversations.message_store(
            conversation_id=conversation.id,
            role=role,
            content=content,
            metadata={**metadata, **({"capture_key": dedupe_key} if dedupe_key else {})},
            created_at=created_at,
        )
    return CaptureResult(
        stored=True, conversation_id=str(conversation.id), message_id=str(message.id), turn_number=message.turn_number,
        project_id=conversation.project_id,
    )


# --- Excluded projects (WINNI_CAPTURE_EXCLUDE) -----------------------------------------------

EXCLUDED = "excluded by WINNI_CAPTURE_EXCLUDE"


def capture_excluded(*, cwd: Any = None, project: Any = None, repository: Any = None) -> bool:
    """Whether a session is not to be captured: a WINNI_CAPTURE_EXCLUDE glob matches its working
    directory, the project it names, or the name or slug of the project it belongs to (found
    without creating one). Costs nothing when no glob is set."""
    globs = settings.WINNI_CAPTURE_EXCLUDE
    if not globs:
        return False
    candidates = [value for value in (cwd, project) if isinstance(value, str) and value.strip()]
    try:
        found = session_project(cwd=cwd, repository=repository, project=project, create=False)
    except InvalidInput:
        found = None
    if found is not None:
        candidates += [found.name, found.slug]
    return any(fnmatch.fnmatchcase(candidate, glob) for candidate in candidates for glob in globs)


# --- Claude Code hooks -----------------------------------------------------------------------


def capped_tool_text(body: Any) -> str:
    """A tool call or result as stored: JSON of its parts with secrets and `<private>` spans
    redacted in each string (raw, before JSON escapes its line breaks; core.redaction.redact_json),
    while it is whole (a secret cut in half by the limit may no longer be recognised), then cut to
    WINNI_CAPTURE_TOOL_MAX_CHARS."""
    clean = redact_json(json.loads(json.dumps(body, ensure_ascii=False, default=str)), field="content", named=True)
    # A lone surrogate (core.paths.LONE_SURROGATE) stays what the client sent: a JSON escape.
    text = paths.LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json.dumps(clean, ensure_ascii=False))
    return cap_text(Redacted(text), settings.WINNI_CAPTURE_TOOL_MAX_CHARS)


def _tool_content(payload: dict[str, Any]) -> str:
    return capped_tool_text({
        "tool_name": payload.get("tool_name"),
        "tool_input": payload.get("tool_input"),
        "tool_response": payload.get("tool_response"),
    })


# The payload keys capture_hook_event reads (the common event, agent_dialects.normalize).
COMMON_KEYS = frozenset({"hook_event_name", "session_id", "cwd", "transcript_path", "agent_event", "source", "prompt",
                         "prompt_field", "last_assistant_message", "tool_name", "tool_input", "tool_response",
                         "tool_use_id", "agent_tool_name", "unknown_fields"})
_warned: set[tuple[str, ...]] = set()
_warned_lock = threading.Lock()


def warn_once(*key: str, message: str) -> None:
    """Log `message` as a warning the first time this process meets `key` (a new payload shape
    is worth one line in the log, not one per event)."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning(message)


def hook_fields(payload: dict[str, Any]) -> dict[str, Any]:
    """The fields of a hook payload capture does not read, kept raw with the message (secrets
    redacted): what the hook program set aside (`unknown_fields`), or, for a payload posted as the
    agent wrote it (hooks of type http), its own unknown keys."""
    fields = payload.get("unknown_fields")
    if not isinstance(fields, dict):
        event = named if isinstance(named := payload.get("hook_event_name"), str) else ""
        fields = agent_dialects.unknown_fields(
            {k: v for k, v in payload.items() if k not in COMMON_KEYS}, event)
    return redact_json(json.loads(json.dumps(fields, ensure_ascii=False, default=str)), field="metadata") \
        if fields else {}


def prompt_content(payload: dict[str, Any], agent: str) -> tuple[str, dict[str, Any]]:
    """The text of a UserPromptSubmit and what the message's metadata says about its shape. A
    prompt of a newer shape is never lost: its text is found in a structure or another field
    (agent_dialects.find_prompt), else the prompt value is kept raw, as JSON; each new shape is
    warned about once. Only an event with no prompt at all (or a blank one) is refused."""
    prompt = payload.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        field = payload.get("prompt_field")
        if not isinstance(field, str) or not field:
            return prompt, {}
        shape = field[:40]
    else:
        unknown = found_unknown if isinstance(found_unknown := payload.get("unknown_fields"), dict) else {}
        found, where = agent_dialects.find_prompt({**unknown, **{k: v for k, v in payload.items()
                                                                  if k not in COMMON_KEYS}, "prompt": prompt})
        if found is not None:
            prompt, shape = found, where
        elif prompt is not None and not isinstance(prompt, str):
            prompt, shape = json.dumps(prompt, ensure_ascii=False, default=str), "raw"
        else:
            return _require_str(payload, "prompt"), {}
    warn_once(agent, "UserPromptSubmit", shape, message=(
        f"capture: a {agent} UserPromptSubmit of a shape Winni does not know: the prompt was "
        + ("kept raw, as JSON" if shape == "raw" else f"read from payload.{shape}")
        + " (a newer agent version? docs/capture.md)"))
    return prompt, {"prompt_shape": shape}


def capture_hook_event(
    *,
    payload: Any,
    event_id: str | None = None,
    captured_at: str | None = None,
    git_branch: str | None = None,
    project: str | None = None,
    repository: Any = None,
    actor: str = "",
    agent: str = agent_dialects.CLAUDE,
) -> CaptureResult:
    """Store what one coding agent's hook event carries (`agent`: claude, codex, gemini or copilot;
    the hook program maps each agent's dialect to Claude Code's event shape, see agent_dialects;
    the conversation's metadata.source names the agent): the prompt (UserPromptSubmit), the reply
    (Stop), the tool call and result (PostToolUse). PreCompact and SessionEnd checkpoint the
    session into the project's medallion (WINNI_CAPTURE_CHECKPOINT); other events store nothing.
    The session's project comes from `project` when it names one, else from `repository` (what the
    hook read: git root, origin remote, root commit) and the payload's cwd (session_project)."""
    if not isinstance(payload, dict):
        raise InvalidInput("payload must be a JSON object (the hook's stdin)", field="payload")
    for key in ("cwd", "transcript_path"):
        value = payload.get(key)
        if value is not None and (not isinstance(value, str) or "\x00" in value):
            raise InvalidInput(f"payload.{key} must be a string without NUL characters", field=f"payload.{key}")
    if agent not in agent_dialects.SOURCES:
        raise InvalidInput(f"agent must be one of {', '.join(agent_dialects.AGENTS)}, got {str(agent)[:40]!r}",
                           field="agent")
    source = agent_dialects.SOURCES[agent]
    event = _require_str(payload, "hook_event_name")
    session_id = _require_str(payload, "session_id")
    if capture_excluded(cwd=payload.get("cwd"), project=project, repository=repository):
        # Acknowledged (the hook does not spool and retry it) and dropped: nothing is stored.
        with storage_op("capture.hook_event", hook_event=event, stored=False, excluded=True):
            return CaptureResult(stored=False, reason=EXCLUDED)
    if event == "UserPromptSubmit":
        content, extra = prompt_content(payload, agent)
        role = "user"
    elif event == "Stop":
        reply = payload.get("last_assistant_message")
        if not isinstance(reply, str) or not reply.strip():
            return CaptureResult(stored=False, reason="no assistant text in this turn")
        role, content, extra = "assistant", reply, {}
    elif event == "PostToolUse":
        _require_str(payload, "tool_name")
        role, content = "tool", _tool_content(payload)
        extra = {"tool_name": payload["tool_name"], "tool_use_id": payload.get("tool_use_id")}
        if isinstance(payload.get("agent_tool_name"), str):
            extra["agent_tool_name"] = payload["agent_tool_name"]
    elif event in CHECKPOINT_EVENTS:
        return _checkpoint(session_id=session_id, event=event, actor=actor, source=source)
    elif event == "SessionStart" and payload.get("source") in RESET_SOURCES:
        reset = autorecall.injections_reset(session_id=session_id)
        return CaptureResult(stored=False, reason=f"SessionStart ({payload['source']}): {reset} injection(s) reset")
    elif event in HOOK_EVENTS:
        return CaptureResult(stored=False, reason=f"{event} stores no message")
    else:
        raise InvalidInput(
            f"payload.hook_event_name must be one of {', '.join(HOOK_EVENTS)}, got {event[:40]!r}",
            field="payload.hook_event_name",
        )
    fields = hook_fields(payload)
    if fields:
        extra["hook_fields"] = fields
    if repository is not None:
        session_identity(cwd=payload.get("cwd"), repository=repository)  # a malformed one is refused now
    # The git root the hook read is what the session's paths are named relative to (core.paths), a
    # Windows one too (projects know POSIX paths only).
    git_root = paths.clean_path(repository.get("git_root")) if isinstance(repository, dict) else ""
    session_metadata = {
        "cwd": storable(payload.get("cwd")),
        "git_branch": storable(git_branch),
        "transcript_path": storable(payload.get("transcript_path")),
        **({"git_root": git_root} if git_root else {}),
    }

    def project_of() -> Project | None:
        return session_project(cwd=payload.get("cwd"), repository=repository, project=project)

    with storage_op("capture.hook_event", hook_event=event, session_id=session_id) as log:
        result = store_in_session(
            source=source,
            session_id=session_id,
            role=role,
            content=content,
            metadata={"hook_event": event, **extra},
            dedupe_key=f"hook:{event_id}" if event_id else None,
            session_metadata=session_metadata,
            created_at=captured_at,
            project=project_of,
        )
        log.update(stored=result.stored, conversation_id=result.conversation_id)
    return result


# Hook events whose capture may bring back what Winni knows (agents.autorecall).
RECALL_EVENTS = ("UserPromptSubmit", "PostToolUse")


def recall_enabled(project: Project | None) -> bool:
    """Automatic recall is on (WINNI_RECALL_INJECT) and the project has not opted out."""
    return settings.WINNI_RECALL_INJECT and autorecall.project_recall_enabled(project)


def hook_recall(*, payload: Any, result: CaptureResult) -> str:
    """What automatic recall adds to a captured hook event (Claude Code's `additionalContext`): for
    UserPromptSubmit the block of what Winni knows about the prompt, linked to the prompt's message;
    for PostToolUse of Read, Edit or Write what Winni knows about that file (once per file per
    session). Empty when nothing is relevant, recall is off (globally or for the session's project), or the
    event is not one that recalls. Never raises on the hook path: a refused prompt (too large)
    injects nothing and is logged."""
    if not isinstance(payload, dict) or payload.get("hook_event_name") not in RECALL_EVENTS:
        return ""
    conversation = (conversations.conversation_find(conversation_id=result.conversation_id)
                    if result.conversation_id else None)
    project = conversation.project if conversation else None
    if not recall_enabled(project):
        return ""
    message_id = result.message_id if result.stored else None
    try:
        if payload["hook_event_name"] == "PostToolUse":
            if payload.get("tool_name") not in autorecall.FILE_TOOLS:
                return ""
            file_path = autorecall.file_named(payload.get("tool_input"), payload.get("cwd"),
                                              roots=conversations.conversation_roots(conversation) if conversation else [])
            if not file_path:
                return ""
            found = autorecall.context_for_file(file_path=file_path, project=project,
                                                session_id=payload.get("session_id"), message_id=message_id)
        else:
            found = autorecall.context_for_prompt(prompt=storable(recall_prompt(payload)), project=project,
                                                  session_id=payload.get("session_id"), trigger="prompt",
                                                  message_id=message_id)
    except ApplicationError as exc:
        _recall_refused(payload, exc)
        return ""
    return found["text"]


def recall_prompt(payload: dict[str, Any]) -> Any:
    """The prompt automatic recall answers: its text, also when it came in a newer shape."""
    prompt = payload.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        return prompt
    found, _ = agent_dialects.find_prompt({k: v for k, v in payload.items() if k not in COMMON_KEYS or k == "prompt"})
    return found if found is not None else prompt


def capture_with_recall(*, payload: Any, actor: str = "", **event: Any) -> tuple[CaptureResult, str]:
    """capture_hook_event(payload, **event) and what automatic recall adds to the event (hook_recall).

    A prompt's capture and its recall are independent but for the prompt's project and the message
    the injection is linked to, so when the session's project is known before the capture (its
    conversation's, or its folder's) the capture is stored by a helper thread while this one
    recalls: the hook waits for the longer of the two instead of their sum. The injection is
    recorded once the prompt's message exists. When the capture finds another project after all
    (a session moved meanwhile) the recall is done again for it, as sequentially."""
    early = _prompt_project(payload, event)
    stored = None
    if early is not None and recall_enabled(early) and not connection.in_atomic_block:
        # Not inside a transaction: the helper's own connection would not see the caller's rows.
        def capture() -> CaptureResult:
            return run_unchecked(lambda: capture_hook_event(payload=payload, actor=actor, **event), retry=False)

        # With the request's context: its token's project limits, its request id in the logs.
        stored = in_background(contextvars.copy_context().run, capture)
    if stored is None:
        result = capture_hook_event(payload=payload, actor=actor, **event)
        return result, hook_recall(payload=payload, result=result)
    found = None
    try:
        found = autorecall.context_for_prompt(prompt=storable(recall_prompt(payload)), project=early,
                                              record=False, session_id=payload.get("session_id"), trigger="prompt")
    except ApplicationError as exc:  # refused (too large): nothing is injected
        _recall_refused(payload, exc)
    try:
        result = stored.result()
    except (OperationalError, InterfaceError):
        # The helper's connection broke before the capture could use it (a database restart since
        # its last use: it is not checked first, see core.connections) and was dropped.
        result = capture_hook_event(payload=payload, actor=actor, **event)
    assert early is not None  # (the capture runs beside only for a prompt with a project)
    if not result.stored or result.project_id != early.pk:
        return result, hook_recall(payload=payload, result=result)
    if found is None:
        return result, ""
    autorecall.injection_record(found, session_id=autorecall.session_key(payload.get("session_id")), project=early,
                                trigger="prompt", message_id=result.message_id)
    return result, found["text"]


def recall_undelivered(*, payload: Any, event_id: str | None, reason: str,
                       agent: str = agent_dialects.CLAUDE) -> int:
    """The hook gave up waiting for Winni's answer to the event `event_id` (it sends the event
    again with `recall_undelivered`): the recall block prepared for it never reached the agent.
    Marks that block not delivered (autorecall.injections_undelivered); returns how many blocks
    were marked (0 when the event stored no message)."""
    source = agent_dialects.SOURCES.get(agent)
    session_id = payload.get("session_id") if isinstance(payload, dict) else None
    if not event_id or source is None or not isinstance(session_id, str):
        return 0
    conversation = session_conversation_find(source=source, session_id=session_id)
    message_id = (conversations.message_id_with_metadata(conversation=conversation, key="capture_key",
                                                         value=f"hook:{event_id}")
                  if conversation is not None else None)
    if message_id is None:
        return 0
    return autorecall.injections_undelivered(message_id=message_id, reason=reason)


def _prompt_project(payload: Any, event: dict[str, Any]) -> Project | None:
    """The project a prompt event's capture will store it in, when that is known beforehand: its
    session's conversation's, else the one its folder or `project` names (none made here)."""
    if not isinstance(payload, dict) or payload.get("hook_event_name") != "UserPromptSubmit":
        return None
    session_id, source = payload.get("session_id"), agent_dialects.SOURCES.get(event.get("agent", agent_dialects.CLAUDE))
    if not isinstance(session_id, str) or not session_id.strip() or source is None:
        return None
    conversation = session_conversation_find(source=source, session_id=session_id)
    if conversation is not None and conversation.project is not None:
        return conversation.project
    try:
        return session_project(cwd=payload.get("cwd"), repository=event.get("repository"),
                               project=event.get("project"), create=False)
    except InvalidInput:
        return None  # the capture names the field


def _recall_refused(payload: dict[str, Any], exc: ApplicationError) -> None:
    with storage_op("capture.recall_refused", session_id=payload.get("session_id")) as log:
        log["error"] = exc.message[:300]


def http_hook(*, payload: Any, actor: str = "") -> dict[str, Any]:
    """One event of a Claude Code hook of type `http` (it posts the hook's input as it is): capture
    it, and answer what Claude Code reads from a hook's JSON output: SessionStart's startup text and
    UserPromptSubmit's recalled block as `hookSpecificOutput.additionalContext`, else nothing ({}).
    The project comes from the payload's cwd (Winni reads the repository there when it runs on
    the same machine)."""
    result, text = capture_with_recall(payload=payload, actor=actor)
    event = payload["hook_event_name"]
    if event == "SessionStart":
        source = payload.get("source") if payload.get("source") in SESSION_START_SOURCES else "startup"
        cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        text = session_start_text(source=source, cwd=cwd)
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}} if text else {}


def project_scope(project: Project) -> dict[str, list[str]]:
    """The medallion scope of a project (agreed with the medallions app: `repo:<slug>` links a
    medallion to its project)."""
    return {"graph_nodes": [], "tags": [f"repo:{project.slug}"]}


def session_start_text(*, source: str = "startup", cwd: str | None = None, project: str | None = None,
                       repository: dict[str, Any] | None = None, session_id: str | None = None) -> str:
    """What the SessionStart hook prints (Claude Code adds it to the context): the active global
    startup context, the session's project's active context, then the project's latest medallions,
    within WINNI_CAPTURE_SESSION_START_CHARS characters (contexts first: they are what the user
    chose to load). Nothing of another project: the project is the session's own (see
    session_project), found without creating one. A session (re)started after a compaction or
    /clear may be given again what automatic recall gave it before (injections_reset)."""
    if source not in SESSION_START_SOURCES:
        raise InvalidInput(
            f"source must be one of {', '.join(SESSION_START_SOURCES)}, got {str(source)[:40]!r}", field="source"
        )
    if session_id and source in RESET_SOURCES:
        autorecall.injections_reset(session_id=session_id)
    parts: list[str] = []
    if capture_excluded(cwd=cwd, project=project, repository=repository):
        return ""
    found = session_project(cwd=cwd, repository=repository, project=project, create=False)
    if found is not None:
        parts += _failures_told(found)
    context = contexts.context_get()
    if context is not None:
        parts.append(f"# Startup context: {context.name} (from Winni)\n\n{context.content.strip()}")
    if found is not None:
        own = contexts.context_get(project=found)
        if own is not None:
            parts.append(f"# Startup context: {own.name}, project {found.slug} (from Winni)\n\n{own.content.strip()}")
        limit = settings.WINNI_CAPTURE_SESSION_START_MEDALLIONS
        checkpoints = medallions.medallions_latest_for_scope(scope={}, project=found, limit=limit) if limit else []
        if checkpoints:
            parts.append(f"# Project checkpoints for {found.slug} (medallions from Winni, newest first)\n\n"
                         + "\n".join(medallions.medallion_as_text(m).strip() + "\n" for m in checkpoints).strip())
    text = "\n\n".join(parts)
    return cap_text(text, settings.WINNI_CAPTURE_SESSION_START_CHARS) if text else ""


def commit_seen_for(*, cwd: str | None, project: str | None, repository: dict[str, Any] | None,
                    head: Any) -> str | None:
    """For the SessionStart hook that sent the repository's `head`: the commit Winni last saw for
    the session's project when it is another ("" when it saw none yet), else None (nothing to
    report; no project yet, an excluded one, no head)."""
    if not isinstance(head, str) or not head.strip() or capture_excluded(cwd=cwd, project=project, repository=repository):
        return None
    found = session_project(cwd=cwd, repository=repository, project=project, create=False)
    if found is None:
        return None
    seen = commits.commit_seen(found)
    return None if seen == head.strip().lower() else seen or ""


def commits_report(*, cwd: str | None, project: str | None, repository: Any, head: Any, since: Any,
                   files: Any) -> commits.CommitReport:
    """The hook's report of the commits since the one Winni last saw (agents.commits.commits_record)
    for the session's project, found as capture finds it (never created here)."""
    found = session_project(cwd=cwd, repository=repository, project=project, create=False)
    if found is not None and capture_excluded(cwd=cwd, project=project, repository=repository):
        found = None
    git_root = repository.get("git_root") if isinstance(repository, dict) else None
    return commits.commits_record(project=found, head=head, since=since, files=files,
                                  git_root=git_root if isinstance(git_root, str) else "")


def _failures_told(project: Project) -> list[str]:
    """One line per checkpoint of the project that failed since a session last started, told once
    (the next start does not repeat it)."""
    failures = checkpoint_failures(project=project, hours=7 * 24, untold=True)
    medallions.medallion_jobs_failure_told(job_ids=[failure["job_id"] for failure in failures])
    return [f"Winni: the checkpoint of {project.slug} at {failure['at'][:16].replace('T', ' ')} UTC failed: "
            f"{failure['error']} (job {failure['job_id']})" for failure in failures]


def _checkpoint(*, session_id: str, event: str, actor: str, source: str = CLAUDE_CODE) -> CaptureResult:
    """Queue the session's digest (conversations.services.digest) and a medallion checkpoint of
    its conversation for its project's scope."""
    conversation = session_conversation_find(source=source, session_id=session_id)
    if conversation is not None:
        conversations.session_digest_queue(conversation_id=conversation.pk, trigger=event)
    if not settings.WINNI_CAPTURE_CHECKPOINT:
        return CaptureResult(stored=False, reason=f"{event}: checkpoints are off (WINNI_CAPTURE_CHECKPOINT)")
    if conversation is None or conversation.project is None or not conversation.messages.exists():
        return CaptureResult(stored=False, reason=f"{event}: nothing to checkpoint")
    with storage_op("capture.checkpoint", hook_event=event, session_id=session_id) as log:
        job = medallions.medallion_checkpoint(
            scope=project_scope(conversation.project), evidence={"conversation_id": str(conversation.id)},
            wait_seconds=0, actor=actor or source,
        )
        log["job_id"] = str(job.id)
    return CaptureResult(stored=False, conversation_id=str(conversation.id), reason=f"{event}: checkpoint queued",
                         checkpoint_job_id=str(job.id))


# --- Claude Code transcripts (JSONL) ---------------------------------------------------------

TRANSCRIPT_MESSAGE_TYPES = ("user", "assistant")


@dataclass
class ImportStats:
    lines: int = 0
    added: int = 0
    duplicates: int = 0
    malformed: int = 0
    other: int = 0
    rejected: int = 0
    excluded: int = 0  # messages of sessions WINNI_CAPTURE_EXCLUDE leaves out
    sessions: set[str] | None = None

    def merge(self, other: "ImportStats") -> None:
        for name in ("lines", "added", "duplicates", "malformed", "other", "rejected", "excluded"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.sessions = (self.sessions or set()) | (other.sessions or set())


@dataclass(frozen=True)
class TranscriptMessage:
    session_id: str
    key: str
    role: str
    content: str
    metadata: dict[str, Any]
    created_at: str | None
    session_metadata: dict[str, Any]


def _block_message(block: Any, role: str) -> tuple[str, str, str] | None:
    """(role, content, block type) for one content block, or None for blocks not stored
    (thinking, images, empty text)."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
        return role, block["text"], "text"
    if kind == "tool_use":
        body = {"tool_use": block.get("name"), "id": block.get("id"), "input": block.get("input")}
        return "tool", capped_tool_text(body), "tool_use"
    if kind == "tool_result":
        body = {"tool_result": block.get("content"), "tool_use_id": block.get("tool_use_id"),
                "is_error": bool(block.get("is_error"))}
        return "tool", capped_tool_text(body), "tool_result"
    return None


def transcript_line_messages(line: Any, *, transcript_path: str = "") -> list[TranscriptMessage]:
    """The messages one transcript line holds. Lines of other types give none; a user or assistant
    line without uuid, sessionId or message raises InvalidInput."""
    if not isinstance(line, dict):
        raise InvalidInput("a transcript line must be a JSON object", field="line")
    role = line.get("type")
    if role not in TRANSCRIPT_MESSAGE_TYPES:
        return []
    uuid_ = _require_str(line, "uuid", prefix="line")
    session_id = _require_str(line, "sessionId", prefix="line")
    message = line.get("message")
    if not isinstance(message, dict):
        raise InvalidInput("line.message must be a JSON object", field="line.message")
    content = message.get("content")
    found: list[tuple[str, str, str] | None]
    if isinstance(content, str):
        found = [(role, content, "text")] if content.strip() else []
    elif isinstance(content, list):
        found = [_block_message(block, role) for block in content]
    else:
        raise InvalidInput("line.message.content must be a string or a list of blocks", field="line.message.content")
    common = {
        "transcript_uuid": uuid_,
        "parent_uuid": line.get("parentUuid"),
        "line_type": role,
        "is_sidechain": bool(line.get("isSidechain")),
    }
    session_metadata = {
        "cwd": storable(line.get("cwd")),
        "git_branch": storable(line.get("gitBranch")),
        "transcript_path": storable(transcript_path),
        "claude_code_version": line.get("version"),
    }
    return [
        TranscriptMessage(
            session_id=session_id,
            key=f"transcript:{uuid_}:{index}",
            role=item[0],
            content=item[1],
            metadata={**common, "block_type": item[2]},
            created_at=line.get("timestamp") if isinstance(line.get("timestamp"), str) else None,
            session_metadata=session_metadata,
        )
        for index, item in enumerate(found)
        if item is not None
    ]


def transcript_import_lines(
    lines: Any, *, transcript_path: str = "", source: str = CLAUDE_TRANSCRIPT,
    parse: Callable[..., list[TranscriptMessage]] = transcript_line_messages,
) -> ImportStats:
    """Import the lines of one JSONL transcript, in order, into one conversation per session
    (metadata source `source`: "claude-code-transcript" for Claude Code's, whose lines `parse`
    reads by default; agents.transcripts brings the other agents' parsers). Idempotent:
    a line's key (Claude Code: its uuid and block index) is stored with each message, and a key
    already present is skipped. A malformed line is counted and skipped; the rest of the file is
    still imported."""
    sessions: set[str] = set()
    stats = ImportStats(sessions=sessions)
    pending: list[TranscriptMessage] = []
    for raw in lines:
        if not raw.strip():
            continue
        stats.lines += 1
        try:
            found = parse(json.loads(raw), transcript_path=transcript_path)
        except (ValueError, InvalidInput):  # json.JSONDecodeError is a ValueError
            stats.malformed += 1
            continue
        if not found:
            stats.other += 1
        pending += found
    by_session: dict[str, list[TranscriptMessage]] = {}
    for item in pending:
        by_session.setdefault(item.session_id, []).append(item)
    with storage_op("capture.transcript_import", path=transcript_path, source=source) as log:
        for session_id, items in by_session.items():
            sessions.add(session_id)
            _import_session(session_id, items, stats, source=source)
        log.update(added=stats.added, duplicates=stats.duplicates, malformed=stats.malformed)
    return stats


def _import_session(session_id: str, items: list[TranscriptMessage], stats: ImportStats, *,
                    source: str = CLAUDE_TRANSCRIPT) -> None:
    """One transaction per session: all of its new messages or none (a message the store refuses,
    e.g. over the size limit, is counted as rejected and rolled back alone)."""
    cwd = items[0].session_metadata.get("cwd")
    if capture_excluded(cwd=cwd):
        stats.excluded += len(items)
        return
    with transaction.atomic():
        conversation = session_conversation(
            source=source, session_id=session_id, metadata=items[0].session_metadata,
            project=lambda: session_project(cwd=cwd),
        )
        known = conversations.message_metadata_values(conversation=conversation, key="capture_key")
        for item in items:
            if item.key in known:
                stats.duplicates += 1
                continue
            try:
                conversations.message_store(
                    conversation_id=conversation.id,
                    role=item.role,
                    content=storable(item.content.replace("\x00", "\ufffd")),
                    metadata={**item.metadata, "capture_key": item.key},
                    created_at=item.created_at,
                )
            except (InvalidInput, ApplicationError):
                stats.rejected += 1
                continue
            known.add(item.key)
            stats.added += 1


# --- MCP logging proxy -----------------------------------------------------------------------


def capture_proxy_message(
    *,
    upstream: str,
    client_session: str,
    direction: str,
    request_id: Any,
    body: dict[str, Any],
    is_error: bool = False,
    captured_at: str | None = None,
    project: str | None = None,
) -> CaptureResult:
    """Store one proxied `tools/call` request or its result as a `tool` message in the client
    session's conversation (session id "<upstream>:<client session>"), in `project` (the proxy's
    --project, checked when it starts) or global."""
    if direction not in ("call", "result"):
        raise InvalidInput("direction must be call or result", field="direction")
    content = capped_tool_text(body)
    with storage_op("capture.proxy_message", upstream=upstream, direction=direction) as log:
        result = store_in_session(
            source=MCP_PROXY,
            session_id=f"{upstream}:{client_session}",
            role="tool",
            content=content,
            metadata={"mcp_method": "tools/call", "direction": direction, "request_id": request_id,
                      "upstream": upstream, "is_error": is_error},
            session_metadata={"upstream": upstream, "client_session": client_session},
            created_at=captured_at,
            project=(lambda: projects.project_for_write(project)) if project else None,
        )
        log.update(conversation_id=result.conversation_id)
    return result


# --- capture activity (the dashboard, /healthz) ------------------------------------------------

CAPTURE_SOURCES = (CLAUDE_CODE, CLAUDE_TRANSCRIPT, MCP_PROXY)


def capture_activity() -> dict[int | None, dict[str, Any]]:
    """Per project (None: sessions without one): when the last captured event (hook, transcript
    or proxy message) arrived, and how many messages were captured today (UTC). Cheap enough for
    /healthz on a large database: the last arrival is the newest `updated_at` (a stored message
    moves it) among the captured conversations, and today's count reads only today's messages
    (the created_at index)."""
    from django.utils import timezone

    midnight = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0)
    return conversations.conversation_activity(sources=CAPTURE_SOURCES, since=midnight)


# A failed checkpoint shows on /healthz and the dashboard for this long.
FAILURES_SHOWN_HOURS = 24


def checkpoint_failures(*, project: Project | None = None, hours: int = FAILURES_SHOWN_HOURS,
                        untold: bool = False) -> list[dict[str, Any]]:
    """The checkpoints that failed in the last `hours` (of `project`, else of every project; with
    `untold` only those not told to the user yet), newest first, as the dashboard and /healthz show
    them: when, which project, the error."""
    from django.utils import timezone

    tags = list(project_scope(project)["tags"]) if project is not None else None
    since = timezone.now() - timedelta(hours=hours)
    return [{"job_id": str(job.id), "at": (job.finished_at or job.created_at).isoformat(),
             "project": next((tag.removeprefix("repo:") for tag in job.tags if tag.startswith("repo:")), None),
             "error": job.error[:300]}
            for job in medallions.medallion_jobs_failed(tags=tags, since=since, untold=untold)]


def capture_health() -> dict[str, Any]:
    """The /healthz line: events captured today and the last one (a quiet day is not an outage; the
    hook itself warns when it cannot send), and the checkpoints that failed in the last
    FAILURES_SHOWN_HOURS (status `failing` while there are any)."""
    from django.utils import timezone

    activity = capture_activity()
    last = max((row["last_event_at"] for row in activity.values() if row["last_event_at"]), default=None)
    failures = checkpoint_failures()
    return {
        "status": "failing" if failures else "ok",
        "events_today": sum(row["events_today"] for row in activity.values()),
        "projects_today": sum(1 for key, row in activity.items() if key is not None and row["events_today"]),
        "last_event_at": last.isoformat() if last else None,
        "last_event_seconds_ago": round((timezone.now() - last).total_seconds(), 1) if last else None,
        "failed_checkpoints": len(failures),
        "last_failure": failures[0] if failures else None,
    }
