"""`./winni service install|uninstall|status`: `./winni run` of this checkout as a user service —
a systemd user unit on Linux, a launchd agent on macOS — restarted when it fails and started at
login. Optional: `./winni run` in a shell stays the way to start.

Install checks the settings first (the settings file and every value, as start-up would), writes
the file atomically (a temporary file renamed into place; systemd's unit is checked with
`systemd-analyze verify` before), then enables and starts it. Both install and uninstall are
idempotent. Where the service manager cannot be reached (no systemd user session, e.g. in a
container or over plain ssh), the file stays written and the message says how to enable it.

Django-free on purpose: the settings are checked in a child process, so neither the check nor
`status` starts the embedded servers."""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import plistlib
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from winni_site import envfile, supervisor

CHECKOUT = envfile.CHECKOUT
EXIT_NOT_RUNNING = 3  # `status`, as LSB init scripts and systemctl say it
EXIT_CONFIG = 78  # as manage.py: a bad setting; systemd does not restart on it
STATUS_LINES = 15
# Loads the settings as `./winni run` would (without starting anything: the URLs below stand in
# for a database and Redis the file does not name) and prints the paths `status` needs.
_CHECK = """
import json, sys
import django
from django.core.exceptions import ImproperlyConfigured
try:
    django.setup()
except ImproperlyConfigured as exc:
    from winni_site import envfile
    print(envfile.explain(str(exc)), file=sys.stderr)
    sys.exit(78)
from django.conf import settings
print(json.dumps({"data_dir": str(settings.DATA_DIR), "log_file": settings.WINNI_LOG_FILE,
                  "url": f"http://{settings.WINNI_HOST}:{settings.WINNI_PORT}"}))
"""
_STAND_INS = {"DATABASE_URL": "postgresql://check@/check?host=/nonexistent", "REDIS_URL": "redis://127.0.0.1:1/0"}


class ServiceError(Exception):
    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Manager:
    """One platform's service manager: where its file goes, what it contains, how to (un)load it."""

    kind: str
    path: Path
    render: Callable[[dict[str, str]], str]
    checkout_of: Callable[[str], str | None]  # the checkout an installed file runs
    verify: Callable[[str, str], str | None]  # complaints about a generated file, None when fine
    verifier: str
    enable: Callable[[Path, bool], list[list[str]]]  # (path, changed): the commands to run
    disable: Callable[[Path], list[list[str]]]
    describe: Callable[[], list[str]]
    how_to_enable: str


def _say(message: str) -> None:
    print(f"winni service: {message}")


# --- systemd (Linux) ------------------------------------------------------------------------


def _systemd_quote(value: str) -> str:
    value = value.replace("%", "%%")
    return f'"{value}"' if any(ch in value for ch in ' "\\') else value


def _systemd_checkout(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("WorkingDirectory="):
            return line.split("=", 1)[1].strip().strip('"').replace("%%", "%")
    return None


def render_systemd(context: dict[str, str]) -> str:
    env_line = (f"Environment={_systemd_quote('WINNI_ENV_FILE=' + context['env_file'])}\n"
                if context.get("env_file") else "")
    checkout = context["checkout"]
    return f"""# Written by `./winni service install` in {checkout}; `./winni service uninstall` removes it.
[Unit]
Description=Winni memory server ({checkout.replace('%', '%%')})
Documentation=file://{checkout.replace('%', '%%').replace(' ', '%20')}/docs/always-on.md
# A Winni that keeps failing at start (5 times in 10 minutes) is left stopped.
StartLimitIntervalSec=600
StartLimitBurst=5

[Service]
Type=simple
WorkingDirectory={_systemd_quote(checkout)}
ExecStart={_systemd_quote(checkout + '/winni')} run
{env_line}Environment=PYTHONUNBUFFERED=1
Restart=on-failure
RestartSec=10
# 78: a bad setting or a failed upgrade; starting again would fail the same way.
RestartPreventExitStatus=78
# SIGTERM to `winni run` alone: it stops web, worker and beat, then PostgreSQL and Redis.
KillMode=mixed
TimeoutStopSec=60

[Install]
WantedBy=default.target
"""


def _systemd(name: str) -> Manager:
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    unit = f"{name}.service"

    def describe() -> list[str]:
        result = _run(["systemctl", "--user", "show", unit,
                       "--property=LoadState,UnitFileState,ActiveState,SubState,MainPID,ActiveEnterTimestamp"])
        if result is None or result.returncode != 0:
            return [f"systemd: not reachable ({_why(result)})"]
        props = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
        line = f"systemd: {props.get('ActiveState', '?')} ({props.get('SubState', '?')})"
        if props.get("ActiveState") == "active":
            line += f" since {props.get('ActiveEnterTimestamp', '?')}, main pid {props.get('MainPID', '?')}"
        return [line + f"; enabled: {props.get('UnitFileState', '?')}"]

    return Manager(
        kind="systemd user unit",
        path=config / "systemd" / "user" / unit,
        render=render_systemd,
        checkout_of=_systemd_checkout,
        verify=verify_systemd,
        verifier="systemd-analyze verify",
        # A changed unit restarts a running Winni; an unchanged one is only started if it is not running.
        enable=lambda path, changed: [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", unit],
                                      ["systemctl", "--user", "restart" if changed else "start", unit]],
        disable=lambda path: [["systemctl", "--user", "disable", "--now", unit]],
        describe=describe,
        how_to_enable=(f"systemctl --user daemon-reload && systemctl --user enable --now {unit}\n"
                       f"  To start it at boot, before you log in: loginctl enable-linger {os.environ.get('USER', '$USER')}"),
    )


def verify_systemd(content: str, unit_name: str) -> str | None:
    """`systemd-analyze --user verify` on the unit (None: fine, or no systemd-analyze here);
    else its complaints. Warnings count: it exits 0 on an unknown key, which would be ignored."""
    if shutil.which("systemd-analyze") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="winni-unit-") as folder:
        unit = Path(folder) / unit_name
        unit.write_text(content)
        runtime = Path(folder) / "runtime"
        runtime.mkdir(mode=0o700)
        env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR") or str(runtime)}
        result = subprocess.run(["systemd-analyze", "--user", "verify", str(unit)], capture_output=True, text=True,
                                env=env, timeout=60)
    output = (result.stdout + result.stderr).strip()
    return output or (None if result.returncode == 0 else f"exit code {result.returncode}")


# --- launchd (macOS) ----------------------------------------------------------------------


def render_launchd(context: dict[str, str]) -> str:
    env = {"PATH": "/usr/local/bin:/opt/homebrew/bin:/usr/bin:/bin", "PYTHONUNBUFFERED": "1"}
    if context.get("env_file"):
        env["WINNI_ENV_FILE"] = context["env_file"]
    plist = {
        "Label": context["label"],
        "ProgramArguments": [f"{context['checkout']}/winni", "run"],
        "WorkingDirectory": context["checkout"],
        "EnvironmentVariables": env,
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},  # again after a failure, not after a clean stop
        "ThrottleInterval": 10,
        "ExitTimeOut": 60,
        "StandardOutPath": context["console_log"],
        "StandardErrorPath": context["console_log"],
    }
    return plistlib.dumps(plist).decode()


def verify_launchd(content: str, file_name: str) -> str | None:
    """`plutil -lint` where it exists (macOS); anywhere, the plist must read back as a dict."""
    try:
        plistlib.loads(content.encode())
    except Exception as exc:  # noqa: BLE001 - plistlib raises several kinds
        return f"not a property list: {exc}"
    if shutil.which("plutil") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="winni-plist-") as folder:
        (Path(folder) / file_name).write_text(content)
        result = subprocess.run(["plutil", "-lint", str(Path(folder) / file_name)], capture_output=True, text=True)
    return None if result.returncode == 0 else (result.stdout + result.stderr).strip()


def _launchd(name: str) -> Manager:
    label = f"dev.winni.{name}"
    domain = f"gui/{os.getuid()}"

    def describe() -> list[str]:
        result = _run(["launchctl", "print", f"{domain}/{label}"])
        if result is None or result.returncode != 0:
            return [f"launchd: not loaded ({_why(result)})"]
        fields = dict(line.strip().split(" = ", 1) for line in result.stdout.splitlines() if " = " in line)
        return [f"launchd: {fields.get('state', '?')}, pid {fields.get('pid', '-')}"]

    return Manager(
        kind="launchd agent",
        path=Path.home() / "Library" / "LaunchAgents" / f"{label}.plist",
        render=render_launchd,
        checkout_of=lambda text: plistlib.loads(text.encode()).get("WorkingDirectory"),
        verify=verify_launchd,
        verifier="plutil -lint",
        enable=lambda path, changed: [["launchctl", "bootout", f"{domain}/{label}"], ["launchctl", "bootstrap", domain, str(path)]],
        disable=lambda path: [["launchctl", "bootout", f"{domain}/{label}"]],
        describe=describe,
        how_to_enable=f"launchctl bootstrap {domain} ~/Library/LaunchAgents/{label}.plist",
    )


def manager_for(platform: str, name: str) -> Manager:
    if platform.startswith("linux"):
        return _systemd(name)
    if platform == "darwin":
        return _launchd(name)
    raise ServiceError(f"unsupported platform {platform!r}: a user service needs Linux (systemd) or macOS (launchd); "
                       "nothing was written. Run ./winni run instead (e.g. under your own process manager).", code=2)


# --- the commands ---------------------------------------------------------------------------


def _run(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    if shutil.which(argv[0]) is None:
        return None
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def _why(result: subprocess.CompletedProcess[str] | None) -> str:
    if result is None:
        return "the command is not installed"
    text = (result.stderr or result.stdout).strip()
    return text.splitlines()[-1] if text else f"exit code {result.returncode}"


def check_settings() -> dict[str, str]:
    """The settings as the service will see them (its environment is not this shell's)."""
    keep = {key: value for key, value in os.environ.items()
            if key in ("HOME", "PATH", "LANG", "USER", "WINNI_ENV_FILE", "XDG_CONFIG_HOME")}
    path = envfile.settings_file()
    in_file = {entry.key for entry in envfile.read(path)} if path else set()
    env = {**keep, "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev",
           **{key: value for key, value in _STAND_INS.items() if key not in in_file}}
    result = subprocess.run([sys.executable, "-c", _CHECK], cwd=CHECKOUT, env=env, capture_output=True, text=True,
                            timeout=300)
    if result.returncode != 0:
        detail = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit code {result.returncode}"
        raise ServiceError(f"the settings would stop Winni at start: {detail}", code=EXIT_CONFIG)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _shell_only_settings() -> list[str]:
    """Settings exported in this shell but not in the file: the service will not have them."""
    path = envfile.settings_file()
    in_file = {entry.key for entry in envfile.read(path)} if path else set()
    return sorted(key for key in os.environ
                  if key.startswith((*envfile.CHECKED_PREFIXES, "DATABASE_URL", "REDIS_URL"))
                  and key in envfile.known_settings() | {"DATABASE_URL", "REDIS_URL"} and key not in in_file)


def _write_atomically(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(content)
    os.replace(tmp, path)


def install(manager: Manager) -> int:
    try:
        paths = check_settings()
    except ServiceError as exc:
        raise ServiceError(f"{exc}; nothing was installed", code=exc.code) from None
    env_file = os.environ.get("WINNI_ENV_FILE")
    context = {"checkout": str(CHECKOUT), "env_file": str(Path(env_file).expanduser().resolve()) if env_file else "",
               "label": manager.path.name.removesuffix(".plist"),
               "console_log": str(Path(paths["data_dir"]) / "logs" / "service-console.log")}
    content = manager.render(context)
    if manager.path.exists() and manager.checkout_of(manager.path.read_text()) != str(CHECKOUT):
        raise ServiceError(f"{manager.path} runs another checkout ({manager.checkout_of(manager.path.read_text())}); "
                           "uninstall it there first, or install this one under another name: "
                           "./winni service install --name winni-2")
    problems = manager.verify(content, manager.path.name)
    if problems:
        raise ServiceError(f"{manager.verifier} refused the generated file, so nothing was installed:\n{problems}")
    changed = not manager.path.exists() or manager.path.read_text() != content
    if changed:
        _write_atomically(manager.path, content)
        _say(f"wrote {manager.kind} {manager.path}")
    else:
        _say(f"{manager.path} is already installed and up to date")
    shell_only = _shell_only_settings()
    if shell_only:
        _say(f"note: {', '.join(shell_only)} set in this shell will not reach the service; "
             f"put {'it' if len(shell_only) == 1 else 'them'} in {envfile.settings_file() or envfile.DEFAULT_FILE}")
    for argv in manager.enable(manager.path, changed):
        result = _run(argv)
        if argv[:2] == ["launchctl", "bootout"]:
            continue  # not loaded yet: fine
        if result is None or result.returncode != 0:
            _say(f"the {manager.kind} is written, but it could not be enabled: `{' '.join(argv)}` failed "
                 f"({_why(result)}).\n  Enable it where a user service manager runs:\n  {manager.how_to_enable}")
            return 1
    _say(f"enabled and started: Winni runs at {paths['url']} and starts at login (`./winni service status`)")
    return 0


def uninstall(manager: Manager) -> int:
    if not manager.path.exists():
        _say(f"not installed ({manager.path} does not exist); nothing to do")
        return 0
    for argv in manager.disable(manager.path):
        result = _run(argv)
        if result is None or result.returncode != 0:
            _say(f"note: `{' '.join(argv)}` failed ({_why(result)}); removing the file anyway")
    manager.path.unlink()
    if manager.kind.startswith("systemd"):
        _run(["systemctl", "--user", "daemon-reload"])
    _say(f"removed {manager.path}")
    return 0


def status(manager: Manager) -> int:
    installed = manager.path.exists()
    print(f"{manager.kind}: {manager.path}" + ("" if installed else " (not installed)"))
    if installed:
        for line in manager.describe():
            print(f"  {line}")
    paths = check_settings()
    run = supervisor.read_status(Path(paths["data_dir"]) / "run")
    if run is None:
        print(f"winni run: not running (data dir {paths['data_dir']})")
    else:
        print(f"winni run: running at {run.get('url', '?')}, pid {run['pid']}")
        for unit, info in run["units"].items():
            since = info.get("since")
            when = (f"since {dt.datetime.fromtimestamp(since, dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC "
                    f"({_duration(time.time() - since)})" if since and info["state"] == "running" else info["state"])
            print(f"  {unit}: pid {info.get('pid') or '-'}, {when}, restarts {info.get('restarts', 0)}")
    log_file = Path(paths["log_file"])
    if paths["log_file"] != "off" and log_file.exists():
        print(f"last lines of {log_file}:")
        for line in _tail(log_file, STATUS_LINES):
            print(f"  {line}")
    return 0 if run is not None else EXIT_NOT_RUNNING


def _duration(seconds: float) -> str:
    minutes, _ = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return f"up {days} d {hours} h" if days else f"up {hours} h {minutes} min" if hours else f"up {minutes} min"


def _tail(path: Path, count: int) -> list[str]:
    with open(path, "rb") as handle:
        handle.seek(max(0, handle.seek(0, os.SEEK_END) - 65536))
        lines = handle.read().decode("utf-8", "replace").splitlines()[-count:]
    shown = []
    for line in lines:
        try:
            record = json.loads(line)
            shown.append(f"{record['ts'][:19]} {record.get('process', '')} {record['level']} "
                         f"{record.get('logger', '')}: {record['msg']}"[:300])
        except (ValueError, KeyError, TypeError):
            shown.append(line[:300])
    return shown


def main(argv: list[str] | None = None, platform: str = sys.platform) -> int:
    parser = argparse.ArgumentParser(prog="./winni service", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["install", "uninstall", "status"])
    parser.add_argument("--name", default="winni", help="the service's name (default winni; one per checkout)")
    args = parser.parse_args(argv)
    if not all(ch.isalnum() or ch in "-_" for ch in args.name):
        parser.error(f"--name must be letters, digits, - and _, got {args.name!r}")
    try:
        manager = manager_for(platform, args.name)
        if args.action == "install":
            return install(manager)
        if args.action == "uninstall":
            return uninstall(manager)
        return status(manager)
    except ServiceError as exc:
        print(f"winni service: {exc}", file=sys.stderr)
        return exc.code
    except envfile.ImproperlyConfigured as exc:
        print(f"winni service: {exc}", file=sys.stderr)
        return EXIT_CONFIG


if __name__ == "__main__":
    sys.exit(main())
