"""Install Winni's capture hooks and MCP server entry into a coding agent's own config files.

Why: every turn should be stored as it happens, whichever agent the developer uses that day
(issue 25). Claude Code, Codex CLI, Gemini CLI and GitHub Copilot CLI each run
`agents/hook.py --agent NAME` on each prompt, reply, tool call and session start; this
command merges those hooks and Winni's MCP server into the agent's files, keeping the user's other
settings, writes the hook's config file (URL, token; mode 600) and prints what it changed. Hooks
and MCP entry share one token (the hook config's, else the one in an existing MCP entry, else a
new one), so installing after `claude mcp add`, or twice, makes no second token. `--uninstall` removes exactly what it added.
See agents/install.py for the files of each agent."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents import dialects
from agents import install as agent_install
from core.errors import ApplicationError
from winni_site import auth

DEFAULT_CONFIG = Path("~/.config/winni/claude-hook.json")


class Command(BaseCommand):
    help = "Merge Winni's capture hooks and MCP server into Claude Code, Codex, Gemini CLI or Copilot CLI config."
    fixed_agent: str | None = None

    def add_arguments(self, parser: CommandParser) -> None:
        if self.fixed_agent is None:
            parser.add_argument("--agent", required=True, choices=dialects.AGENTS, help="which coding agent")
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--user", action="store_true", help="the agent's config in your home (the default)")
        where.add_argument("--project", metavar="DIR", help="the agent's config inside project DIR")
        parser.add_argument("--uninstall", action="store_true", help="remove what an earlier install added")
        parser.add_argument("--url", help="Winni's URL (default http://WINNI_HOST:WINNI_PORT)")
        parser.add_argument("--token", help="an existing token secret (default: the hook config's, else the agent's Winni MCP entry's, if Winni knows it; else a new one)")
        parser.add_argument("--token-name", help="name of the token to create (default: the agent's source name)")
        parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="where the hook's config file goes")
        parser.add_argument("--python", default=os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
                            help="Python 3 interpreter that runs the hook")
        parser.add_argument("--hook-type", choices=("command", "http"), default="command",
                            help="Claude Code only. command: run agents/hook.py (spools events while Winni is down; "
                                 "the default); http: Claude Code posts each event to Winni itself (docs/capture.md)")
        parser.add_argument("--dry-run", action="store_true", help="print the files instead of writing them")

    def handle(self, *args: Any, **options: Any) -> None:
        agent = self.fixed_agent or options["agent"]
        http = options["hook_type"] == "http"
        if http and agent != dialects.CLAUDE:
            raise CommandError(f"--hook-type http: only Claude Code runs hooks of type http, not {agent}")
        project = None
        if options["project"]:
            project = Path(options["project"]).expanduser().resolve()
            if not project.is_dir():
                raise CommandError(f"--project: {project} is not a directory")
        host = "127.0.0.1" if settings.WINNI_HOST in ("0.0.0.0", "::") else settings.WINNI_HOST
        url = (options["url"] or f"http://{host}:{settings.WINNI_PORT}").rstrip("/")
        config_path = Path(options["config"]).expanduser().resolve()
        install = not options["uninstall"]
        def hook(event: str) -> str:
            return agent_install.hook_command(python=options["python"], config=config_path, agent=agent,
                                              event=event if agent == dialects.COPILOT else None)

        # A placeholder secret while planning: a token is created only once every file could be read.
        target = agent_install.Target(agent=agent, project=project, home=Path.home(), url=url,
                                      token="winni_PENDING", hook=hook, http=http)
        # One token for the hooks and the MCP entry, whichever came first: the hook config's, else
        # the one `claude mcp add` (or an earlier install) put in the agent's MCP entry, if Winni
        # knows it; a new one only when neither works or one is asked for by name. So following
        # the README (`claude mcp add` with the first run's token, then this command) makes no
        # second token, and running this again changes nothing.
        secret = options["token"] or ""
        if install and not secret and not options["token_name"]:
            candidates = [self.existing_token(config_path), *agent_install.mcp_entry_secrets(target)]
            secret = next((s for s in candidates if s and auth.token_authenticate(s) is not None), "")
        target.token = secret or target.token
        try:
            edits = agent_install.plan(target, install=install)
        except agent_install.ConfigError as exc:
            raise CommandError(str(exc)) from exc
        if options["dry_run"]:
            if self.fixed_agent:  # install_claude_hooks --dry-run printed the settings alone
                self.stdout.write(edits[0].after or "{}")
                return
            for edit in edits:
                self.stdout.write(f"--- {edit.path}" + ("" if edit.changed else " (unchanged)"))
                self.stdout.write(edit.after if edit.after is not None else "(deleted)")
            return
        if install and not secret:
            secret = self.create_token(options["token_name"] or dialects.SOURCES[agent])
            target.token = secret
            edits = agent_install.plan(target, install=install)
        if install:
            agent_install.write_atomic(config_path, json.dumps({"url": url, "token": secret, "timeout": 2}, indent=2)
                                       + "\n", secret=True)
            config_path.chmod(0o600)
        agent_install.apply(edits)
        for edit in edits:
            if edit.changed:
                verb = "deleted" if edit.after is None else "updated" if edit.before is not None else "created"
                self.stdout.write(f"{verb} {edit.path}: " + "; ".join(edit.changes))
            else:
                self.stdout.write(f"{edit.path}: already as wanted")
            for note in edit.notes:
                self.stdout.write(f"{edit.path}: {note}")
        if install:
            self.stdout.write(f"hook config: {config_path}")
            self.stdout.write(self.notes(agent, project, url, secret, http))
            if project:
                shared = [str(e.path) for e in edits if e.secret and e.after is not None]
                self.stdout.write(f"note: {', '.join(shared)} now hold the token: keep them out of version "
                                  "control (or commit a copy that reads it from your environment)")
        else:
            self.stdout.write(f"the hook config {config_path} is kept (other agents may use it)")

    def existing_token(self, config_path: Path) -> str | None:
        try:
            token = json.loads(config_path.read_text()).get("token")
        except (OSError, ValueError, AttributeError):
            return None
        return token if isinstance(token, str) and token else None

    def create_token(self, name: str) -> str:
        try:
            _, secret = auth.token_create(name=name)
        except ApplicationError as exc:
            raise CommandError(f"{exc.message}; pass --token SECRET or another --token-name") from exc
        return secret

    def notes(self, agent: str, project: Path | None, url: str, secret: str, http: bool = False) -> str:
        if agent == dialects.CLAUDE and project and http:
            return (f'export WINNI_TOKEN={secret}  # the http hooks read the token from it\n'
                    f'claude mcp add --transport http winni {url}/mcp --header "Authorization: Bearer {secret}"')
        if agent == dialects.CLAUDE:
            return (f"MCP server: {url}/mcp with the hooks' token, in place (the entry "
                    f'claude mcp add --transport http winni {url}/mcp --header "Authorization: Bearer {secret}" '
                    "would add: nothing more to run)")
        if agent == dialects.CODEX and project:
            return ("note: Codex reads a project's .codex/ folder only once you trust the project "
                    "(answer its trust prompt, or `codex exec --trust`)")
        if agent == dialects.COPILOT and project:
            return "note: Copilot CLI runs a folder's hooks once you trust the folder (its prompt, or --trust-folder)"
        return f"MCP server: {url}/mcp"
