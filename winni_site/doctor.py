"""`./winni doctor`: what each coding agent whose hooks are installed gets from Winni, seen from
the agent's side, and what is misconfigured, each problem with the command that fixes it.

For each agent (Claude Code, Codex, Gemini CLI, Copilot CLI) whose config holds Winni's prompt
hook, the doctor runs that installed hook command as the agent would: the agent's own payload
shape (as recorded in tests/data/traffic) for a synthetic prompt, on stdin, in a shell. It prints
what the agent would add to the prompt (the hook's stdout as that agent reads it) or why nothing
(automatic recall's gate), the hook's latency, its token's scope and projects, and the MCP entry
with the tool set it is served and that set's tools/list size. The hook runs with a spool, log
and state of its own (a scratch folder), so a failure cannot queue the synthetic prompt for the
real sessions, and the conversation it captured is deleted afterwards.

Misconfiguration is found by asking the installer (agents.install) what it would change
with the installed hook's own interpreter, config and token: a missing event, an untrusted Codex
hook, an MCP entry with another token or URL are all "install would change this"."""
from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.utils import timezone

from agents import dialects
from agents import install as agent_install

PROMPT = "What did we decide about how this project stores money amounts?"
HTTP_TIMEOUT = 3.0
START = "./winni run"
NAMES = {dialects.CLAUDE: "Claude Code", dialects.CODEX: "Codex CLI", dialects.GEMINI: "Gemini CLI",
         dialects.COPILOT: "Copilot CLI"}


@dataclass
class Problem:
    what: str
    fix: str


@dataclass
class InstalledHook:
    agent: str
    path: Path  # the file holding it
    event: str  # the agent's own name of its prompt event
    command: str | None  # a command hook (the hook program)
    http: dict[str, Any] | None = None  # Claude Code's hook of type http

    @property
    def config(self) -> Path | None:
        """The hook program's config file (--config), None for an http hook."""
        parts = shlex.split(self.command or "")
        return Path(parts[parts.index("--config") + 1]) if "--config" in parts[:-1] else None

    @property
    def python(self) -> str:
        return shlex.split(self.command or "")[0]


@dataclass
class Report:
    agent: str
    hook: InstalledHook
    lines: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


# --- what is installed --------------------------------------------------------------------------


def prompt_event(agent: str) -> str:
    return next(name for name in dialects.INSTALLED_EVENTS[agent] if dialects.EVENTS[agent].get(name) == "UserPromptSubmit")


def _target(agent: str, home: Path, project: Path | None, url: str = "http://127.0.0.1:9020", token: str = "",
            hook: Any = None) -> agent_install.Target:
    return agent_install.Target(agent=agent, project=project, home=home, url=url, token=token,
                                hook=hook or (lambda event: ""))


def installed_hooks(agent: str, home: Path, project: Path | None = None) -> list[InstalledHook]:
    """Winni's prompt hooks in the agent's config (the user's, or a project's): the files are the
    ones an uninstall would change (agent_install's plan, never applied)."""
    event = prompt_event(agent)
    found = []
    for edit in agent_install.plan(_target(agent, home, project), install=False):
        if edit.path.suffix != ".json" or not any(change.startswith("hooks.") for change in edit.changes):
            continue  # Codex's config.toml holds the hooks' trust, not the hooks
        data = agent_install.parse_json(edit.path, edit.before)
        for entry in (data.get("hooks") or {}).get(event) or []:
            handlers = entry.get("hooks", [entry]) if isinstance(entry, dict) else []
            for handler in handlers if isinstance(handlers, list) else []:
                if not isinstance(handler, dict):
                    continue
                command = handler.get("command") or handler.get("bash")
                if agent_install.is_winni_command(command):
                    found.append(InstalledHook(agent, edit.path, event, str(command)))
                elif str(handler.get("url", "")).endswith(agent_install.HTTP_HOOK_PATH):
                    found.append(InstalledHook(agent, edit.path, event, None, http=handler))
    return found


def hook_config(hook: InstalledHook) -> dict[str, Any]:
    """The hook program's config file (URL, token), {} when it cannot be read."""
    try:
        loaded = json.loads(hook.config.read_text(encoding="utf-8")) if hook.config else {}
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def hook_secret(hook: InstalledHook) -> str:
    if hook.http is not None:
        value = str((hook.http.get("headers") or {}).get("Authorization", ""))
        return os.path.expandvars(value).removeprefix("Bearer ").strip()
    return str(os.environ.get("WINNI_TOKEN") or hook_config(hook).get("token") or "")


def hook_url(hook: InstalledHook, default: str) -> str:
    if hook.http is not None:
        return str(hook.http["url"]).removesuffix(agent_install.HTTP_HOOK_PATH)
    return str(os.environ.get("WINNI_URL") or hook_config(hook).get("url") or default).rstrip("/")


# --- the agent's payload and the hook run ---------------------------------------------------------


def payload(agent: str, *, session_id: str, cwd: str, prompt: str, scratch: Path) -> dict[str, Any]:
    """A prompt event in the agent's own shape (tests/data/traffic holds the recorded ones)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    transcript = str(scratch / f"{session_id}.jsonl")
    if agent == dialects.CLAUDE:
        return {"session_id": session_id, "transcript_path": transcript, "cwd": cwd, "prompt_id": str(uuid.uuid4()),
                "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    if agent == dialects.CODEX:
        return {"session_id": session_id, "turn_id": str(uuid.uuid4()), "transcript_path": transcript, "cwd": cwd,
                "hook_event_name": "UserPromptSubmit", "model": "doctor", "permission_mode": "default",
                "prompt": prompt}
    if agent == dialects.GEMINI:
        return {"session_id": session_id, "transcript_path": transcript, "cwd": cwd, "hook_event_name": "BeforeAgent",
                "timestamp": now, "prompt": prompt}
    return {"hook_event_name": "UserPromptSubmit", "session_id": session_id, "timestamp": now, "cwd": cwd,
            "prompt": prompt}


@dataclass
class HookRun:
    output: str  # what the hook printed (or Claude Code's http hook answered)
    seconds: float
    failure: str | None = None  # why the run itself failed (not found, timed out, an HTTP error)
    log: str = ""  # the hook program's own log of this run


def run_hook(hook: InstalledHook, event: dict[str, Any], scratch: Path) -> HookRun:
    body = json.dumps(event)
    started = time.perf_counter()
    if hook.http is not None:
        headers = {key: os.path.expandvars(str(value)) for key, value in (hook.http.get("headers") or {}).items()}
        request = urllib.request.Request(hook.http["url"], data=body.encode(), method="POST",
                                         headers={"Content-Type": "application/json", **headers})
        try:
            with urllib.request.urlopen(request, timeout=float(hook.http.get("timeout") or 10)) as answer:
                return HookRun(answer.read().decode(), time.perf_counter() - started)
        except (urllib.error.URLError, OSError) as exc:
            return HookRun("", time.perf_counter() - started, failure=f"the http hook failed: {exc}")
    # Its own spool, log and state: a failure here must not queue the synthetic prompt for later.
    env = {**os.environ, "WINNI_HOOK_SPOOL": str(scratch / "spool.jsonl"), "WINNI_HOOK_LOG": str(scratch / "hook.log")}
    shell = ["bash", "-c"] if hook.agent == dialects.COPILOT else ["sh", "-c"]
    try:
        done = subprocess.run([*shell, str(hook.command)], input=body, capture_output=True, text=True, env=env,
                              timeout=agent_install.HOOK_TIMEOUT_SECONDS + 5)
    except subprocess.TimeoutExpired:
        return HookRun("", time.perf_counter() - started, failure="the hook did not finish within its timeout")
    seconds = time.perf_counter() - started
    log = (scratch / "hook.log").read_text(encoding="utf-8") if (scratch / "hook.log").exists() else ""
    failure = None
    if done.returncode != 0:
        failure = f"the hook command failed (exit {done.returncode}): {(done.stderr or done.stdout).strip()[:300]}"
    return HookRun(done.stdout, seconds, failure=failure, log=log.strip())


def received(output: str) -> str:
    """What the agent adds to the prompt from the hook's output: the additionalContext of its JSON
    (hookSpecificOutput, or Copilot's top level), else the plain text."""
    text = output.strip()
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text
    inner = specific if isinstance(specific := data.get("hookSpecificOutput"), dict) else data
    return str(inner.get("additionalContext") or "")


# --- Winni over HTTP --------------------------------------------------------------------------------


def _http(url: str, *, secret: str = "", body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST", headers={
        "Content-Type": "application/json", **({"Authorization": f"Bearer {secret}"} if secret else {}),
        **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"null")
        except ValueError:
            return exc.code, None


def winni_up(url: str) -> str | None:
    """None when Winni answers /healthz, else why not."""
    try:
        status, _ = _http(f"{url}/healthz")
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))
    return None if status in (200, 503) else f"/healthz answered {status}"


@functools.lru_cache(maxsize=8)  # agents sharing one entry's URL and token are served the same list
def tools_list(mcp_url: str, secret: str) -> tuple[int, tuple[str, ...], int]:
    """(HTTP status, tool names, characters of the tools/list result) as the agent's client gets them."""
    status, answer = _http(mcp_url, secret=secret, body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                           headers={"Accept": "application/json, text/event-stream"})
    result = answer.get("result") if isinstance(answer, dict) else None
    if status != 200 or not isinstance(result, dict):
        return status, (), 0
    return status, tuple(tool["name"] for tool in result.get("tools", [])), len(json.dumps(result, separators=(",", ":")))


def why_nothing(url: str, secret: str, prompt: str, project: str | None) -> str:
    """Automatic recall's own reason for giving nothing (its gate), asked without a session (so
    nothing is recorded as given)."""
    try:
        status, answer = _http(f"{url}/api/v1/recall/context", secret=secret,
                               body={"prompt": prompt, **({"project": project} if project else {})})
    except (urllib.error.URLError, OSError) as exc:
        return f"recall could not be asked ({exc})"
    if status != 200 or not isinstance(answer, dict):
        return f"recall answered {status}: {answer}"
    gate = answer.get("gate") or {}
    return str(gate.get("reason") or gate)


# --- one agent ------------------------------------------------------------------------------------


def install_command(agent: str, project: Path | None) -> str:
    where = f" --project {shlex.quote(str(project))}" if project else ""
    return f"./winni manage install_agent_hooks --agent {agent}{where}"


def _same_hook(command: str) -> Any:
    """The hook command for another of the agent's events, in the installed command's own form
    (its interpreter, config, and `--event` where it names one)."""
    parts = shlex.split(command)

    def hook(event: str) -> str:
        if "--event" in parts[:-1]:
            at = parts.index("--event") + 1
            return shlex.join([*parts[:at], event, *parts[at + 1:]])
        return shlex.join(parts)

    return hook


def check_config(report: Report, *, home: Path, project: Path | None, url: str, secret: str) -> None:
    """What the installer would change, given the installed hook's own interpreter, config and
    token: each change is a misconfiguration that re-running it fixes."""
    hook = report.hook
    target = _target(report.agent, home, project, url=url, token=secret,
                     hook=_same_hook(hook.command) if hook.command else None)
    target.http = hook.http is not None
    fix = install_command(report.agent, project)
    try:
        edits = agent_install.plan(target, install=True)
    except agent_install.ConfigError as exc:
        report.problems.append(Problem(str(exc), f"fix the file by hand, then {fix}"))
        return
    for edit in edits:
        for change in edit.changes:
            report.problems.append(Problem(f"{edit.path}: not as installed ({change})", fix))
        for note in edit.notes:
            report.problems.append(Problem(f"{edit.path}: {note.removeprefix('note: ')}",
                                           f"set it to true in {edit.path}"))


def examine(agent: str, hook: InstalledHook, *, home: Path, project: Path | None, cwd: str, prompt: str,
            default_url: str) -> Report:
    from winni_site import auth

    report = Report(agent, hook)
    url, secret = hook_url(hook, default_url), hook_secret(hook)
    fix = install_command(agent, project)
    where = f"{hook.path}" + (f", config {hook.config}" if hook.config else "")
    report.lines.append(f"hook: {hook.event} in {where}")
    if hook.command:
        files = [hook.python, *(part for part in shlex.split(hook.command) if part.endswith(agent_install.HOOK_SCRIPT.name))]
        if not all(Path(name).exists() for name in files):
            report.problems.append(Problem(f"the hook command names a file that is gone: {hook.command}", fix))
        if hook.config and not hook.config.exists():
            report.problems.append(Problem(f"the hook's config {hook.config} is missing", fix))
    token = auth.token_authenticate(secret) if secret else None
    if token is None:
        report.problems.append(Problem("the hook's token is unknown to Winni or revoked" if secret else
                                       "the hook has no token", fix))
    else:
        projects = ", ".join(sorted(token.projects.values_list("slug", flat=True))) or "all, and the global rows"
        sets = ", ".join(token.toolsets) or "every served set"
        report.lines.append(f"token: {token.name}, scope {token.scope}; projects: {projects}; tool sets: {sets}")
        if token.scope == "read":
            report.problems.append(Problem(f"the token {token.name} is read-only: capture is refused",
                                           f"./winni manage winni_token create {agent}-hooks --scope write, then "
                                           f"{fix} --token SECRET"))

    session_id = f"winni-doctor-{uuid.uuid4().hex[:12]}"
    sent_at = timezone.now()
    with tempfile.TemporaryDirectory(prefix="winni-doctor-") as folder:
        scratch = Path(folder)
        run = run_hook(hook, payload(agent, session_id=session_id, cwd=cwd, prompt=prompt, scratch=scratch), scratch)
    report.lines.append(f"prompt sent: {prompt!r} (cwd {cwd})")
    report.lines.append(f"hook latency: {run.seconds * 1000:,.0f} ms")
    project_slug = forget_session(session_id, since=sent_at)
    block = received(run.output)
    if run.failure:
        report.problems.append(Problem(run.failure, fix))
    if block:
        report.lines.append("the agent receives:")
        report.lines += [f"  | {line}" for line in block.splitlines()]
    else:
        reason = run.log.splitlines()[-1] if run.log else why_nothing(url, secret, prompt, project_slug)
        report.lines.append(f"the agent receives nothing: {reason}")
    if project_slug is None and not run.failure and token is not None:
        report.problems.append(Problem("the prompt was not captured (no conversation was stored)" +
                                       (f": {run.log.splitlines()[-1]}" if run.log else ""), fix))
    else:
        report.lines.append(f"project: {project_slug or 'none (global)'}")

    entries = agent_install.mcp_entry_secrets(_target(agent, home, project))
    if not entries:
        report.problems.append(Problem("no Winni MCP entry in the agent's config: it cannot search", fix))
    else:
        if secret and secret not in entries:
            report.problems.append(Problem("the MCP entry and the hooks use different tokens", fix))
        status, names, chars = tools_list(f"{url}/mcp", entries[0])
        if status != 200:
            report.problems.append(Problem(f"tools/list with the MCP entry's token answered {status}", fix))
        else:
            from django.conf import settings

            report.lines.append(f"MCP: {url}/mcp, tool sets {', '.join(settings.WINNI_MCP_TOOLSETS)}: "
                                f"{len(names)} tools, tools/list {chars:,} characters ≈ {chars // 4:,} tokens")
    check_config(report, home=home, project=project, url=url, secret=secret)
    return report


def forget_session(session_id: str, since: Any) -> str | None:
    """Delete what the synthetic prompt left (its conversation, what recall gave it, and the
    project its capture made for the folder when it was new (created `since`) and holds nothing
    else: found using Winni, a doctor run from a checkout left an empty project named after it);
    the project it was captured in, None when nothing was captured."""
    from agents.models import Injection
    from conversations import services
    from conversations.models import Conversation
    from core import projects

    slug, made = None, []
    for conversation in Conversation.objects.filter(session_id=session_id).select_related("project"):
        slug = conversation.project.slug if conversation.project else ""
        if conversation.project is not None and conversation.project.created_at >= since:
            made.append(conversation.project)
        services.conversation_delete(conversation_id=str(conversation.pk), force=True)
    Injection.objects.filter(session_id=session_id).delete()
    for project in made:
        projects.project_delete_if_empty(project)
    return slug


# --- every agent ----------------------------------------------------------------------------------


def doctor(*, home: Path, project: Path | None, cwd: str, prompt: str, default_url: str,
           write: Any) -> int:
    """Print the report; the exit status: 0 when nothing is wrong, 1 otherwise."""
    from django.conf import settings

    started = time.perf_counter()
    tools_list.cache_clear()
    found, unreadable = [], []
    for agent in dialects.AGENTS:
        try:
            found += [(agent, hook) for hook in installed_hooks(agent, home, project)]
        except agent_install.ConfigError as exc:
            unreadable.append(f"{NAMES[agent]}: {exc}")
    urls = dict.fromkeys([hook_url(hook, default_url) for _, hook in found] or [default_url])
    for url in urls:
        down = winni_up(url)
        if down is not None:
            write(f"Winni is not running at {url} ({down}).")
            write(f"  start it: {START}   (or as a service: ./winni service install)")
            return 1
        write(f"Winni at {url}: running")
    write(f"MCP tool sets served (WINNI_MCP_TOOLSETS): {', '.join(settings.WINNI_MCP_TOOLSETS)}")
    for unreadable_file in unreadable:
        write(f"PROBLEM: {unreadable_file.replace('; nothing was changed', '')}")
        write("  fix: correct the file by hand (the agent cannot read it either)")
    if not found:
        where = f"project {project}" if project else str(home)
        write(f"No agent's Winni hooks are installed ({where}).")
        for agent in dialects.AGENTS:
            write(f"  {NAMES[agent]}: {install_command(agent, project)}")
        return 1
    problems = len(unreadable)
    for agent, hook in found:
        report = examine(agent, hook, home=home, project=project, cwd=cwd, prompt=prompt, default_url=default_url)
        write("")
        write(f"{NAMES[agent]}")
        for line in report.lines:
            write(f"  {line}")
        for problem in report.problems:
            write(f"  PROBLEM: {problem.what}")
            write(f"    fix: {problem.fix}")
        problems += len(report.problems)
    missing = [NAMES[agent] for agent in dialects.AGENTS if agent not in {agent for agent, _ in found}]
    write("")
    if missing:
        write(f"Not installed: {', '.join(missing)} ({install_command('AGENT', project)} adds one).")
    write(f"{problems or 'No'} problem{'s' if problems != 1 else ''} found, in {time.perf_counter() - started:.1f} s.")
    return 1 if problems else 0
