"""Install Winni's capture hooks into Claude Code's settings JSON.

Why: seed 001 requires every turn to be stored as it happens, without relying on the agent to
remember. Claude Code's command hooks run `winni_site/claude_hook.py` on each prompt, reply, tool
call and session start; this command writes those hook entries (merging into existing settings,
replacing only earlier Winni entries), writes the hook's config file (URL, token; mode 600) and
prints the `claude mcp add` line for the MCP tools."""
from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import ApplicationError
from winni_site import auth

HOOK_SCRIPT = Path(__file__).resolve().parents[2] / "claude_hook.py"
DEFAULT_CONFIG = Path("~/.config/winni/claude-hook.json")
# Events the hook handles, and the matcher each needs (tool events match every tool).
EVENTS: dict[str, str | None] = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PostToolUse": "*",
    "Stop": None,
    "PreCompact": None,
    "SessionEnd": None,
}
HOOK_TIMEOUT_SECONDS = 10


def hook_command(*, python: str, config: Path) -> str:
    # -I -S: the hook needs only the standard library; skipping site-packages keeps start-up fast.
    return " ".join(shlex.quote(part) for part in (python, "-I", "-S", str(HOOK_SCRIPT), "--config", str(config)))


HTTP_HOOK_PATH = "/api/v1/capture/hook"


def http_hook(*, url: str, secret: str | None) -> dict[str, Any]:
    """A hook of type http: Claude Code posts the event to Winni itself. With no secret the token
    comes from the WINNI_TOKEN environment variable (a project's settings file may be committed)."""
    hook: dict[str, Any] = {"type": "http", "url": url + HTTP_HOOK_PATH, "timeout": HOOK_TIMEOUT_SECONDS}
    if secret:
        hook["headers"] = {"Authorization": f"Bearer {secret}"}
    else:
        hook.update(headers={"Authorization": "Bearer $WINNI_TOKEN"}, allowedEnvVars=["WINNI_TOKEN"])
    return hook


def is_winni_entry(entry: Any) -> bool:
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and (HOOK_SCRIPT.name in str(h.get("command", ""))
                                 or str(h.get("url", "")).endswith(HTTP_HOOK_PATH))
        for h in hooks
    )


def merge_hooks(existing: dict[str, Any], command: str | dict[str, Any]) -> dict[str, Any]:
    """Settings with Winni's hook entries added (`command`: the command line of a command hook,
    or a whole hook object); other keys and other hooks are kept as they are, earlier Winni
    entries are replaced (so re-running the command is idempotent)."""
    merged = dict(existing)
    hooks = merged.get("hooks") or {}
    if not isinstance(hooks, dict):
        raise CommandError("the settings file's \"hooks\" is not a JSON object; fix it by hand first")
    hooks = dict(hooks)
    for event, matcher in EVENTS.items():
        entries = [e for e in hooks.get(event) or [] if not is_winni_entry(e)]
        hook = command if isinstance(command, dict) else {"type": "command", "command": command,
                                                            "timeout": HOOK_TIMEOUT_SECONDS}
        entry: dict[str, Any] = {"hooks": [hook]}
        if matcher is not None:
            entry = {"matcher": matcher, **entry}
        hooks[event] = [*entries, entry]
    merged["hooks"] = hooks
    return merged


def write_json(path: Path, data: dict[str, Any], *, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".winni-tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    if mode is not None:
        tmp.chmod(mode)
    os.replace(tmp, path)


class Command(BaseCommand):
    help = "Write Winni's capture hooks into Claude Code's settings (user or project) and print the MCP line."

    def add_arguments(self, parser: CommandParser) -> None:
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--user", action="store_true", help="~/.claude/settings.json (the default)")
        where.add_argument("--project", metavar="DIR", help="DIR/.claude/settings.json")
        parser.add_argument("--url", help="Winni's URL (default http://WINNI_HOST:WINNI_PORT)")
        parser.add_argument("--token", help="an existing token secret (default: create one)")
        parser.add_argument("--token-name", default="claude-code", help="name of the token to create")
        parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="where the hook's config file goes")
        parser.add_argument("--python", default=os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
                            help="Python 3 interpreter that runs the hook")
        parser.add_argument("--hook-type", choices=("command", "http"), default="command",
                            help="command: run claude_hook.py (spools events while Winni is down; the default); "
                                 "http: Claude Code posts each event to Winni itself (docs/capture.md)")
        parser.add_argument("--dry-run", action="store_true", help="print the settings instead of writing")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["project"]:
            project = Path(options["project"]).expanduser().resolve()
            if not project.is_dir():
                raise CommandError(f"--project: {project} is not a directory")
            settings_path = project / ".claude" / "settings.json"
        else:
            settings_path = Path("~/.claude/settings.json").expanduser()
        host = "127.0.0.1" if settings.WINNI_HOST in ("0.0.0.0", "::") else settings.WINNI_HOST
        url = (options["url"] or f"http://{host}:{settings.WINNI_PORT}").rstrip("/")
        config_path = Path(options["config"]).expanduser().resolve()

        existing: dict[str, Any] = {}
        if settings_path.exists():
            try:
                existing = json.loads(settings_path.read_text() or "{}")
            except ValueError as exc:
                raise CommandError(f"{settings_path} is not valid JSON ({exc}); nothing was changed") from exc
            if not isinstance(existing, dict):
                raise CommandError(f"{settings_path} does not hold a JSON object; nothing was changed")
        http = options["hook_type"] == "http"
        if options["dry_run"]:
            hook = http_hook(url=url, secret=None) if http else hook_command(python=options["python"],
                                                                              config=config_path)
            self.stdout.write(json.dumps(merge_hooks(existing, hook), indent=2))
            return

        secret = options["token"]
        if not secret:
            try:
                _, secret = auth.token_create(name=options["token_name"])
            except ApplicationError as exc:
                raise CommandError(f"{exc.message}; pass --token SECRET or another --token-name") from exc
        if http:
            # The user's settings are private: the token goes in the header. A project's settings may
            # be committed: the header names $WINNI_TOKEN, which the user exports.
            merged = merge_hooks(existing, http_hook(url=url, secret=None if options["project"] else secret))
        else:
            merged = merge_hooks(existing, hook_command(python=options["python"], config=config_path))
            write_json(config_path, {"url": url, "token": secret, "timeout": 2}, mode=0o600)
        write_json(settings_path, merged, mode=0o600 if http and not options["project"] else None)
        if http:
            self.stderr.write(f"http hooks written to {settings_path}"
                              + ("; export WINNI_TOKEN=<the token below> before starting claude" if options["project"]
                                 else ""))
        else:
            self.stderr.write(f"hooks written to {settings_path}; hook config in {config_path}")
        self.stdout.write(
            f'claude mcp add --transport http winni {url}/mcp --header "Authorization: Bearer {secret}"'
        )
