"""Install (and uninstall) Winni's capture hooks and MCP server entry into a coding agent's own
config files: Claude Code, Codex CLI, Gemini CLI, GitHub Copilot CLI (docs/capture.md).

Why: each agent reads hooks and MCP servers from its own files in its own format; a user should
not have to hand-edit four of them. Every file is read first, and all are written only when all
could be read (an invalid JSON or TOML file is refused by name and line, nothing is written);
each write goes to a temporary file renamed over the old one. The user's other settings are kept.
Winni's entries are recognised by the hook program's file name in their command (hooks), the
server name `winni` with a URL ending in /mcp (JSON MCP entries), and a "# added by Winni" comment
(TOML), so installing again replaces them and uninstalling removes exactly them."""
from __future__ import annotations

import copy
import hashlib
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from agents import dialects

HOOK_SCRIPT = Path(__file__).resolve().parent / "hook.py"
# What a hook command of Winni's runs: this hook program, or the path hooks installed before it
# moved to agents/ still name (winni_site/claude_hook.py, which runs it).
HOOK_COMMAND_MARKS = (f"{HOOK_SCRIPT.parent.name}{os.sep}{HOOK_SCRIPT.name}", "claude_hook.py")
MCP_NAME = "winni"
MARK = "added by Winni (install_agent_hooks)"
HOOK_TIMEOUT_SECONDS = 10
# Codex's trust keys name the hook by its event's snake_case label.
CODEX_LABELS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit",
                "PostToolUse": "post_tool_use", "Stop": "stop", "PreCompact": "pre_compact"}


class ConfigError(Exception):
    """A config file that cannot be changed safely (invalid JSON/TOML, an unexpected shape)."""


@dataclass
class Edit:
    """One file's new text (None: delete the file) and what changed in it."""

    path: Path
    before: str | None
    after: str | None
    changes: list[str]
    secret: bool = False  # the new text holds the token: a new file gets mode 600
    notes: tuple[str, ...] = ()  # what the user should know (printed whether or not the file changed)

    @property
    def changed(self) -> bool:
        return self.before != self.after


def hook_command(*, python: str, config: Path, agent: str, event: str | None = None) -> str:
    # -I -S: the hook needs only the standard library; skipping site-packages keeps start-up fast.
    parts = [python, "-I", "-S", str(HOOK_SCRIPT), "--config", str(config)]
    if agent != dialects.CLAUDE:
        parts += ["--agent", agent]
    if event:
        parts += ["--event", event]
    return " ".join(shlex.quote(part) for part in parts)


def is_winni_command(command: Any) -> bool:
    return any(mark in str(command or "") for mark in HOOK_COMMAND_MARKS)


# Claude Code also runs hooks of type http: it posts the event to Winni itself (docs/capture.md).
HTTP_HOOK_PATH = "/api/v1/capture/hook"


def http_hook(*, url: str, secret: str | None) -> dict[str, Any]:
    """A Claude Code hook of type http. With no secret the token comes from the WINNI_TOKEN
    environment variable (a project's settings file may be committed)."""
    hook: dict[str, Any] = {"type": "http", "url": url + HTTP_HOOK_PATH, "timeout": HOOK_TIMEOUT_SECONDS}
    if secret:
        hook["headers"] = {"Authorization": f"Bearer {secret}"}
    else:
        hook.update(headers={"Authorization": "Bearer $WINNI_TOKEN"}, allowedEnvVars=["WINNI_TOKEN"])
    return hook


def _is_winni_hook(hook: Any) -> bool:
    return isinstance(hook, dict) and (is_winni_command(hook.get("command"))
                                       or str(hook.get("url", "")).endswith(HTTP_HOOK_PATH))


# --- reading ------------------------------------------------------------------------------------


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror}); nothing was changed") from exc


def parse_json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}, line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg}); "
                          "nothing was changed") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: does not hold a JSON object; nothing was changed")
    return data


def parse_toml(path: Path, text: str | None) -> Any:
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        return tomlkit.parse(text or "")
    except ParseError as exc:
        raise ConfigError(f"{path}, line {exc.line} column {exc.col}: not valid TOML ({exc}); "
                          "nothing was changed") from exc


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _object(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: \"{key}\" is not a JSON object; fix it by hand first; nothing was changed")
    return dict(value)


# --- nested hooks (Claude Code, Codex, Gemini): {"hooks": {Event: [{matcher?, hooks: [...]}]}} ----


def _is_winni_group(entry: Any) -> bool:
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    return isinstance(hooks, list) and any(_is_winni_hook(h) for h in hooks)


def merge_nested_hooks(settings: dict[str, Any], path: Path, groups: dict[str, dict[str, Any]] | None,
                       changes: list[str]) -> dict[str, Any]:
    """`settings` with Winni's group for each event of `groups` last in that event's list (earlier
    Winni groups removed); with `groups` None, Winni's groups removed (and an event list or the
    hooks object left empty by that removed too)."""
    merged = dict(settings)
    hooks = _object(merged, "hooks", path)
    for event in sorted(set(hooks) | set(groups or {})):
        entries = hooks.get(event) or []
        if not isinstance(entries, list):
            raise ConfigError(f"{path}: hooks.{event} is not a list; fix it by hand first; nothing was changed")
        kept = [e for e in entries if not _is_winni_group(e)]
        if groups is not None and event in groups:
            new = [*kept, groups[event]]
            if new != entries:
                changes.append(f"hooks.{event}: Winni's hook {'updated' if len(kept) < len(entries) else 'added'}")
            hooks[event] = new
        elif len(kept) < len(entries):
            changes.append(f"hooks.{event}: Winni's hook removed")
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    if hooks:
        merged["hooks"] = hooks
    else:
        merged.pop("hooks", None)
    return merged


def merge_mcp_json(settings: dict[str, Any], path: Path, entry: dict[str, Any] | None, changes: list[str],
                   key: str = "mcpServers") -> dict[str, Any]:
    merged = dict(settings)
    servers = _object(merged, key, path)
    current = servers.get(MCP_NAME)
    if entry is not None:
        if current != entry and not _same_server(current, entry):
            changes.append(f"{key}.{MCP_NAME}: {'replaced' if current else 'added'} ({_url_of(entry)})")
            servers[MCP_NAME] = entry
    elif isinstance(current, dict) and str(_url_of(current)).rstrip("/").endswith("/mcp"):
        del servers[MCP_NAME]
        changes.append(f"{key}.{MCP_NAME}: removed")
    if servers:
        merged[key] = servers
    else:
        merged.pop(key, None)
    return merged


def _url_of(entry: dict[str, Any]) -> Any:
    return entry.get("url") or entry.get("httpUrl")


def _same_server(current: Any, entry: dict[str, Any]) -> bool:
    """The same URL and token: an entry another agent's install wrote in a shared file (a project's
    .mcp.json serves Claude Code and Copilot CLI) is left as it is."""
    return (isinstance(current, dict) and _url_of(current) == _url_of(entry)
            and isinstance(current.get("headers"), dict)
            and current["headers"].get("Authorization") == entry["headers"]["Authorization"])


# --- Codex's hook trust -------------------------------------------------------------------------


def codex_trust_hash(event: str, group: dict[str, Any]) -> str:
    """The hash Codex compares with `[hooks.state."<key>"] trusted_hash` before it runs a hook it
    does not manage (codex-rs hooks discovery): sha256 of the canonical JSON (sorted keys, no
    spaces) of {event_name: <snake label>, matcher?: ..., hooks: [<the normalised handler>]}. The
    Codex CLI test checks it against the real CLI."""
    handler = group["hooks"][0]
    normalized = {"type": "command", "command": handler["command"], "timeout": handler.get("timeout", 600),
                  "async": bool(handler.get("async", False))}
    if handler.get("statusMessage") is not None:
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": CODEX_LABELS[event], "hooks": [normalized]}
    if group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _marked(item: Any) -> bool:
    trivia = getattr(item, "trivia", None)
    return bool(trivia is not None and MARK in (trivia.comment or ""))


# --- the plan per agent -------------------------------------------------------------------------


@dataclass
class Target:
    agent: str
    project: Path | None  # None: the user's own config
    home: Path
    url: str
    token: str
    hook: Callable[[str], str]  # the hook command for one of the agent's event names
    http: bool = False  # Claude Code only: hooks of type http instead of the hook program

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    @property
    def bearer(self) -> str:
        return f"Bearer {self.token}"


def _json_edit(path: Path, change: Callable[[dict[str, Any], list[str]], dict[str, Any]], *,
               secret: bool = False, delete_when_empty: bool = False) -> Edit:
    before = read_text(path)
    data = parse_json(path, before)
    changes: list[str] = []
    new = change(copy.deepcopy(data), changes)
    if not changes:
        return Edit(path, before, before, [])
    if delete_when_empty and not new:
        return Edit(path, before, None, changes)
    return Edit(path, before, dump_json(new), changes, secret=secret)


def plan_claude(target: Target, install: bool) -> list[Edit]:
    base = target.project / ".claude" if target.project else target.home / ".claude"
    groups = None
    if install:
        groups = {}
        for event in dialects.INSTALLED_EVENTS[dialects.CLAUDE]:
            if target.http:
                # The user's settings are private: the token goes in the header. A project's may be
                # committed: the header names $WINNI_TOKEN, which the user exports.
                hook = http_hook(url=target.url, secret=None if target.project else target.token)
            else:
                hook = {"type": "command", "command": target.hook(event), "timeout": HOOK_TIMEOUT_SECONDS}
            group: dict[str, Any] = {"hooks": [hook]}
            groups[event] = {"matcher": "*", **group} if event == "PostToolUse" else group
    # Claude Code's MCP servers: the user's in ~/.claude.json (as `claude mcp add --scope user`
    # writes them), a project's in DIR/.mcp.json (Claude Code asks before using a project's servers).
    mcp_path = target.project / ".mcp.json" if target.project else target.home / ".claude.json"
    entry = {"type": "http", "url": target.mcp_url, "headers": {"Authorization": target.bearer}} if install else None
    path = base / "settings.json"
    return [_json_edit(path, lambda d, c: merge_nested_hooks(d, path, groups, c), secret=target.http and not target.project),
            _json_edit(mcp_path, lambda d, c: merge_mcp_json(d, mcp_path, entry, c), secret=install,
                       delete_when_empty=True)]


def plan_gemini(target: Target, install: bool) -> list[Edit]:
    path = (target.project or Path(os.environ.get("GEMINI_CLI_HOME") or target.home)) / ".gemini" / "settings.json"
    groups = entry = None
    if install:
        groups = {event: {"hooks": [{"name": "winni-capture", "type": "command", "command": target.hook(event),
                                     "timeout": HOOK_TIMEOUT_SECONDS * 1000}]}
                  for event in dialects.INSTALLED_EVENTS[dialects.GEMINI]}
        entry = {"httpUrl": target.mcp_url, "headers": {"Authorization": target.bearer}, "trust": True,
                 "description": "Winni memory"}

    def change(data: dict[str, Any], changes: list[str]) -> dict[str, Any]:
        return merge_mcp_json(merge_nested_hooks(data, path, groups, changes), path, entry, changes)

    return [_json_edit(path, change, secret=install)]


def plan_copilot(target: Target, install: bool) -> list[Edit]:
    if target.project:
        hooks_path, mcp_path = target.project / ".github" / "hooks" / "winni.json", target.project / ".mcp.json"
    else:
        copilot_home = Path(os.environ.get("COPILOT_HOME") or target.home / ".copilot")
        hooks_path, mcp_path = copilot_home / "hooks" / "winni.json", copilot_home / "mcp-config.json"
    entries = None
    if install:
        entries = {event: {"type": "command", "bash": target.hook(event), "timeoutSec": HOOK_TIMEOUT_SECONDS}
                   for event in dialects.INSTALLED_EVENTS[dialects.COPILOT]}
    entry = {"type": "http", "url": target.mcp_url, "headers": {"Authorization": target.bearer},
             "tools": ["*"]} if install else None

    def change_hooks(data: dict[str, Any], changes: list[str]) -> dict[str, Any]:
        hooks = _object(data, "hooks", hooks_path)
        for event in sorted(set(hooks) | set(entries or {})):
            current = hooks.get(event) or []
            if not isinstance(current, list):
                raise ConfigError(f"{hooks_path}: hooks.{event} is not a list; nothing was changed")
            kept = [e for e in current if not (isinstance(e, dict) and is_winni_command(e.get("bash")))]
            new = [*kept, entries[event]] if entries and event in entries else kept
            if new != current:
                changes.append(f"hooks.{event}: Winni's hook {'added' if entries else 'removed'}")
            if new:
                hooks[event] = new
            else:
                hooks.pop(event, None)
        if hooks:
            return {"version": data.get("version", 1), **{k: v for k, v in data.items() if k != "version"},
                    "hooks": hooks}
        return {k: v for k, v in data.items() if k not in ("hooks", "version")}

    return [_json_edit(hooks_path, change_hooks, delete_when_empty=True),
            _json_edit(mcp_path, lambda d, c: merge_mcp_json(d, mcp_path, entry, c), secret=install,
                       delete_when_empty=target.project is not None)]


def plan_codex(target: Target, install: bool) -> list[Edit]:
    import tomlkit

    codex_home = Path(os.environ.get("CODEX_HOME") or target.home / ".codex")
    hooks_path = (target.project / ".codex" if target.project else codex_home) / "hooks.json"
    user_config = codex_home / "config.toml"
    mcp_config = (target.project / ".codex" / "config.toml") if target.project else user_config
    groups = None
    if install:
        groups = {event: {"hooks": [{"type": "command", "command": target.hook(event),
                                     "timeout": HOOK_TIMEOUT_SECONDS}]}
                  for event in dialects.INSTALLED_EVENTS[dialects.CODEX]}
    hooks_edit = _json_edit(hooks_path, lambda d, c: merge_nested_hooks(d, hooks_path, groups, c),
                            delete_when_empty=True)
    # Trust: Codex runs a user's (non-managed) hook only when ~/.codex/config.toml holds its hash
    # under a key naming the file, the event and the hook's place in that event's list.
    after = parse_json(hooks_path, hooks_edit.after) if hooks_edit.after else {}
    trust: dict[str, str] = {}
    for event, entries in (after.get("hooks") or {}).items():
        for index, group in enumerate(entries if isinstance(entries, list) else []):
            if event in CODEX_LABELS and _is_winni_group(group):
                trust[f"{hooks_path}:{CODEX_LABELS[event]}:{index}:0"] = codex_trust_hash(event, group)

    edits = [hooks_edit]
    texts: dict[Path, str | None] = {}
    docs: dict[Path, Any] = {}
    changes: dict[Path, list[str]] = {}
    for path in dict.fromkeys([user_config, mcp_config]):
        texts[path] = read_text(path)
        docs[path] = parse_toml(path, texts[path])
        changes[path] = []

    user = docs[user_config]
    hooks_table = user.get("hooks")
    state = hooks_table.get("state") if hasattr(hooks_table, "get") else None
    if state is not None:
        for key in [k for k in state if str(k).startswith(f"{hooks_path}:") and _marked(state[k])]:
            if trust.get(key) != state[key].get("trusted_hash"):
                del state[key]
                changes[user_config].append(f"hooks.state: trust of {key.rsplit(':', 3)[1]} removed")
    if trust:
        hooks_table = user.setdefault("hooks", tomlkit.table(is_super_table=True))
        state = hooks_table.setdefault("state", tomlkit.table(is_super_table=True))
        for key, value in trust.items():
            if key in state and state[key].get("trusted_hash") == value:
                continue
            entry = tomlkit.table()
            entry.comment(MARK)
            entry["trusted_hash"] = value
            state[key] = entry
            changes[user_config].append(f"hooks.state: Winni's {key.rsplit(':', 3)[1]} hook trusted")
    if hooks_table is not None and state is not None and not state:
        del hooks_table["state"]
        if not hooks_table:
            del user["hooks"]
    features = user.get("features")
    notes: list[str] = []
    if install and features is not None and features.get("hooks") is False and not _marked(features.item("hooks")):
        # The user turned Codex's hooks off: that choice stays theirs.
        notes.append("note: [features] hooks = false in this file: Codex runs no hook (Winni's neither) "
                     "until you set it to true")
    elif install and not (features and features.get("hooks") is True):
        if features is None:
            features = user.setdefault("features", tomlkit.table())
        flag = tomlkit.item(True)
        flag.comment(MARK)
        features["hooks"] = flag
        changes[user_config].append("features.hooks = true")
    elif not install and features is not None and "hooks" in features and _marked(features.item("hooks")):
        del features["hooks"]
        changes[user_config].append("features.hooks removed")
        if not features:
            del user["features"]

    doc = docs[mcp_config]
    servers = doc.get("mcp_servers")
    current = servers.get(MCP_NAME) if servers is not None else None
    if install:
        entry = tomlkit.table()
        entry.comment(MARK)
        entry["url"] = target.mcp_url
        headers = tomlkit.inline_table()
        headers["Authorization"] = target.bearer
        entry["http_headers"] = headers
        # Winni's tools run without a confirmation each time (in `codex exec` an unapproved MCP call
        # fails): the user installed this server to be used.
        entry["default_tools_approval_mode"] = "approve"
        if current is None or current.get("url") != target.mcp_url or current.get("default_tools_approval_mode") \
                != "approve" or dict(current.get("http_headers") or {}) != {"Authorization": target.bearer}:
            if servers is None:
                servers = doc.setdefault("mcp_servers", tomlkit.table(is_super_table=True))
            servers[MCP_NAME] = entry
            changes[mcp_config].append(f"mcp_servers.{MCP_NAME}: {'replaced' if current else 'added'} "
                                       f"({target.mcp_url})")
    elif current is not None and _marked(current):
        del servers[MCP_NAME]
        changes[mcp_config].append(f"mcp_servers.{MCP_NAME}: removed")
        if not servers:
            del doc["mcp_servers"]
    for path, doc in docs.items():
        text = tomlkit.dumps(doc) if changes[path] else texts[path]
        if changes[path] and not install and text is not None:  # (changed: the text tomlkit wrote)
            # What is left once Winni's tables are gone: the user's text as it was (a file that
            # held only Winni's tables goes away).
            text = text.rstrip("\n") + "\n" if text.strip() else None
        edits.append(Edit(path, texts[path], text, changes[path], secret=path == mcp_config and install,
                          notes=tuple(notes) if path == user_config else ()))
    return edits


# --- the token already there ----------------------------------------------------------------------


def _mcp_files(target: Target) -> list[Path]:
    """Where the agent keeps Winni's MCP entry (the files the plan writes it to)."""
    if target.agent == dialects.CLAUDE:
        return [target.project / ".mcp.json" if target.project else target.home / ".claude.json"]
    if target.agent == dialects.GEMINI:
        return [(target.project or Path(os.environ.get("GEMINI_CLI_HOME") or target.home)) / ".gemini" / "settings.json"]
    if target.agent == dialects.COPILOT:
        return [target.project / ".mcp.json" if target.project
                else Path(os.environ.get("COPILOT_HOME") or target.home / ".copilot") / "mcp-config.json"]
    codex_home = Path(os.environ.get("CODEX_HOME") or target.home / ".codex")
    return [(target.project / ".codex" / "config.toml") if target.project else codex_home / "config.toml"]


def _bearer(headers: Any) -> str | None:
    value = headers.get("Authorization") if hasattr(headers, "get") else None
    secret = str(value)[len("Bearer "):].strip() if str(value or "").startswith("Bearer ") else ""
    return secret if secret and "$" not in secret else None  # "${WINNI_TOKEN}": the user's environment


def mcp_entry_secrets(target: Target) -> list[str]:
    """The bearer tokens of Winni's MCP entries already in the agent's config, the entry the
    install writes first: `claude mcp add --scope user` writes the very entry install_agent_hooks
    writes, and `claude mcp add` (local scope) one per folder in ~/.claude.json's "projects".
    Files that cannot be read give nothing here (the plan reports them)."""
    found: list[str] = []
    for path in _mcp_files(target):
        try:
            text = read_text(path)
            data: Any = parse_toml(path, text) if path.suffix == ".toml" else parse_json(path, text)
        except ConfigError:
            continue
        key, headers = ("mcp_servers", "http_headers") if path.suffix == ".toml" else ("mcpServers", "headers")
        entries: list[Any] = [(data.get(key) or {}).get(MCP_NAME) if hasattr(data.get(key) or {}, "get") else None]
        if path.name == ".claude.json" and isinstance(data.get("projects"), dict):
            entries += [(folder.get("mcpServers") or {}).get(MCP_NAME) for folder in data["projects"].values()
                        if isinstance(folder, dict) and isinstance(folder.get("mcpServers"), dict)]
        for entry in entries:
            if hasattr(entry, "get") and str(_url_of(entry) or "").rstrip("/").endswith("/mcp"):
                secret = _bearer(entry.get(headers))
                if secret and secret not in found:
                    found.append(secret)
    return found


PLANS: dict[str, Callable[[Target, bool], list[Edit]]] = {
    dialects.CLAUDE: plan_claude, dialects.CODEX: plan_codex, dialects.GEMINI: plan_gemini,
    dialects.COPILOT: plan_copilot,
}


def plan(target: Target, *, install: bool = True) -> list[Edit]:
    """Every file edit for installing (or removing) Winni in one agent's config; reads and checks
    every file first and raises ConfigError before anything is written."""
    return PLANS[target.agent](target, install)


def write_atomic(path: Path, text: str | None, *, secret: bool = False) -> None:
    """Write through a temporary file renamed over the old one (a reader never sees half a file);
    an existing file keeps its mode, a new one holding a secret gets 600."""
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else (0o600 if secret else None)
    tmp = path.with_name(f".{path.name}.winni-{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        if mode is not None:
            tmp.chmod(mode)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def apply(edits: list[Edit]) -> None:
    for edit in edits:
        if edit.changed:
            write_atomic(edit.path, edit.after, secret=edit.secret)
