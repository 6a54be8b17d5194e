"""The messages' part in anchors and stale marks (core.anchors): a captured tool call that changes
files (Edit, MultiEdit, NotebookEdit, Write, and their other agents' names; `mv`, `rm`, `git mv`,
`git rm` and a Codex patch's `*** Delete File:` / `*** Move to:` in a shell command) records each
file's change; a user's or assistant's turn is an item whose text may name files. Paths are read
as the project knows them (core.paths.project_path, relative to the conversation's roots and its
session's working directory)."""
from __future__ import annotations

import posixpath
import re
import shlex
from typing import Any

from conversations import toolcalls
from conversations.models import Message, Role
from conversations.services import conversation_roots
from core import anchors, paths
from core.models import FileChange

EDITS = toolcalls.EDIT | {"MultiEdit", "NotebookEdit"}
PATH_ARGS = ("file_path", "notebook_path", "path", "absolute_path")
_PATCH = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)
_SEPARATORS = {";", "&&", "||", "|", "&", "\n"}
_RECURSIVE = re.compile(r"^-[a-zA-Z]*[rR]")

# (change, path as written, renamed to as written, may be a folder)
RawChange = tuple[str, str, str, bool]


def call_changes(name: str, args: dict[str, Any]) -> list[RawChange]:
    """The file changes one tool call makes, paths as the call wrote them."""
    path = next((args[key] for key in PATH_ARGS if isinstance(args.get(key), str) and args[key]), "")
    if name in EDITS:
        return [(FileChange.EDIT, path, "", False)] if path else []
    if name in toolcalls.WRITE:
        return [(FileChange.WRITE, path, "", False)] if path else []
    if name in toolcalls.SHELL or name == "apply_patch":
        command = args.get("command", args.get("cmd", args.get("input", "")))
        if isinstance(command, list):
            # Codex runs `["bash", "-lc", "<script>"]`: the script is the command.
            shell = len(command) == 3 and str(command[0]).rsplit("/", 1)[-1] in ("bash", "sh", "zsh") \
                and command[1] in ("-c", "-lc")
            command = str(command[2]) if shell else " ".join(str(part) for part in command)
        return shell_changes(str(command))
    return []


def shell_changes(command: str) -> list[RawChange]:
    """What a shell command renames or deletes: `mv`, `rm`, `git mv`, `git rm` (each part of a
    `;`/`&&`/`|` chain), and a patch's file headers."""
    found = _patch_changes(command)
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote: read what a plain split gives
        tokens = command.split()
    segment: list[str] = []
    for token in [*tokens, ";"]:
        if token in _SEPARATORS or set(token) <= set(";&|"):
            found += _command_changes(segment)
            segment = []
        else:
            segment.append(token)
    return found


def _patch_changes(command: str) -> list[RawChange]:
    found: list[RawChange] = []
    updating = ""
    for match in _PATCH.finditer(command):
        action, path, moved = match.groups()
        if moved and updating:
            found.append((FileChange.RENAME, updating, moved, False))
        elif action == "Delete":
            found.append((FileChange.DELETE, path, "", False))
        elif action in ("Add", "Update"):
            updating = path
            found.append((FileChange.WRITE if action == "Add" else FileChange.EDIT, path, "", False))
    return found


def _command_changes(tokens: list[str]) -> list[RawChange]:
    while tokens and (tokens[0] in ("sudo", "command") or re.match(r"^\w+=", tokens[0])):
        tokens = tokens[1:]
    if len(tokens) >= 2 and tokens[0] == "git" and tokens[1] in ("mv", "rm"):
        tokens = tokens[1:]
    if not tokens or tokens[0] not in ("mv", "rm"):
        return []
    options = [t for t in tokens[1:] if t.startswith("-") and t != "--"]
    operands = [t for t in tokens[1:] if not t.startswith("-") or t == "--"]
    operands = [t for t in operands if t != "--"]
    if tokens[0] == "rm":
        folder = any(_RECURSIVE.match(option) or option == "--recursive" for option in options)
        return [(FileChange.DELETE, path, "", folder) for path in operands]
    if len(operands) < 2:
        return []
    *sources, target = operands
    if len(sources) > 1 or target.endswith("/"):
        return [(FileChange.RENAME, source, posixpath.join(target, posixpath.basename(source.rstrip("/"))), True)
                for source in sources]
    return [(FileChange.RENAME, sources[0], target, True)]


def _roots(message: Message, cache: dict[Any, tuple[str, ...]]) -> tuple[str, ...]:
    if message.conversation_id not in cache:
        cache[message.conversation_id] = tuple(conversation_roots(message.conversation))
    return cache[message.conversation_id]


def _cwd(message: Message) -> Any:
    metadata = message.conversation.metadata if isinstance(message.conversation.metadata, dict) else {}
    return metadata.get("cwd")


def messages_load(ids: list[Any]) -> list[Message]:
    return list(Message.objects.filter(pk__in=ids).select_related("conversation"))


def message_changes(messages: list[Message]) -> list[anchors.Change]:
    """The file changes the tool calls among `messages` made (messages of no project: none)."""
    found: list[anchors.Change] = []
    roots: dict[Any, tuple[str, ...]] = {}
    for message in messages:
        if message.role != Role.TOOL or message.project_id is None:
            continue
        call = toolcalls.tool_call(message.content)
        if call is None:
            continue
        raw = call_changes(*call[:2])
        if not raw:
            continue
        folders, cwd = _roots(message, roots), _cwd(message)
        for change, path, renamed_to, folder in raw:
            relative = paths.project_path(path, roots=folders, cwd=cwd)
            target = paths.project_path(renamed_to, roots=folders, cwd=cwd) if renamed_to else ""
            if not relative or paths.outside_project(relative):
                continue
            found.append(anchors.Change(
                project_id=message.project_id, path=relative, change=change, at=message.created_at,
                session_id=message.conversation.session_id or "", renamed_to=target, roots=folders, folder=folder))
    return found


def message_items(messages: list[Message]) -> list[anchors.Item]:
    """The turns (user and assistant messages: what was said, not tool output) as items."""
    roots: dict[Any, tuple[str, ...]] = {}
    # A turn names no file more often than not: its roots are looked up only when it does. A
    # message is never rewritten, so one that names nothing has no anchor to clear either.
    return [anchors.Item(key=f"message:{message.pk}", project_id=message.project_id, text=message.content,
                         at=message.created_at, roots=_roots(message, roots),
                         session_id=message.conversation.session_id or "")
            for message in messages
            if message.role in (Role.USER, Role.ASSISTANT) and message.project_id is not None
            and anchors.names_files(message.content)]
