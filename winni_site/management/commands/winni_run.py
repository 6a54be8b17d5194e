"""Run everything: the embedded PostgreSQL and Redis (unless DATABASE_URL / REDIS_URL are set),
migrations (backed up; a failed one is rolled back, winni_site.upgrade), first-run credentials,
uvicorn (Django + MCP), a Celery worker and Celery beat — and keep them running: a part that dies
is started again (winni_site.supervisor). Ctrl-C (or SIGTERM) stops the children, then the
embedded servers: nothing is left running.

The console stays calm: what started and where, the login once, the line that connects Claude
Code, then only warnings, errors and restarts. Every JSON log line goes to the log file
(WINNI_LOG_FILE); `--verbose` shows them (and the children's other output) here too."""
from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from winni_site import auth, embedded, supervisor, upgrade
from winni_site.models import ApiToken
from winni_site.supervisor import ChildProcess, EmbeddedServer, GaveUp, Supervisor, Unit

EXIT_GAVE_UP = 1
EXIT_CONFIG = 78  # as manage.py: the user service does not restart on it
HEALTHY_WITHIN = 60
# How long "up" waits for the worker's first heartbeat once the web answers.
WORKER_WITHIN = 30
CONSOLE_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
# Tests only: replace one child's command by one that fails at once (the crash-loop test).
BROKEN_CHILD = "WINNI_TEST_BROKEN_CHILD"


class Command(BaseCommand):
    help = "Start Winni: web server (Django + MCP at /mcp), Celery worker and beat, embedded services; keep them running."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-worker", action="store_true", help="do not start the Celery worker and beat")
        parser.add_argument("--web-workers", type=int, default=settings.WINNI_WEB_WORKERS)
        parser.add_argument("--verbose", action="store_true",
                            help="show every log line and the children's own output here, not only warnings")
        parser.add_argument("--retry-migrations", action="store_true",
                            help="apply migrations that failed before again, although they did not change")

    def handle(self, *args: Any, **options: Any) -> None:
        run_dir = settings.DATA_DIR / "run"
        with supervisor.single_instance(run_dir / supervisor.LOCK_FILE) as alone:
            if not alone:
                other = (supervisor.read_status(run_dir) or {}).get("pid", "?")
                raise CommandError(f"Winni already runs for the data dir {settings.DATA_DIR} (pid {other}); "
                                   "stop it first (Ctrl-C there, or ./winni service status)")
            code = self._run(run_dir, options)
        if code:
            sys.exit(code)

    def _run(self, run_dir: Path, options: dict[str, Any]) -> int:
        # From this process's start (manage.py imports the supervisor first, before Django's set-up
        # and the embedded servers): what the user waits for.
        started = supervisor.PROCESS_STARTED
        console = Console(self, verbose=options["verbose"])
        servers = _embedded_servers(settings.DATA_DIR)
        children = _children(options, console.child_env)
        sup = Supervisor([*servers, *children], on_line=console.child_line, on_event=console.event,
                         on_change=lambda: supervisor.write_status(run_dir, sup, url=console.url))
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, sup.request_stop)
        try:
            for server in servers:
                sup.adopt(server)  # the settings started them (or found them running)
            try:
                upgrade.migrate(run_dir=run_dir, say=console.say, retry=options["retry_migrations"])
            except upgrade.UpgradeFailed as exc:
                console.error(str(exc))
                return EXIT_CONFIG
            first_token = self._first_run_credentials(console)
            for child in children:
                sup.start(child)
            ready, starting = self._wait_ready(sup, console, started=started, worker=not options["no_worker"])
            if ready:
                console.announce(first_token, time.monotonic() - started, [u.name for u in sup.units], starting)
            while not sup.stop_requests:
                sup.step()
            return 0
        except GaveUp as exc:
            console.error(str(exc))
            return EXIT_GAVE_UP
        finally:
            sup.stop_all()
            console.say("stopped")

    def _first_run_credentials(self, console: Console) -> str | None:
        """On the first run, make an API token and an admin login and print them once."""
        token_secret = None
        if not ApiToken.objects.exists():
            _, token_secret = auth.token_create(name="default")
        user_model = get_user_model()
        if not user_model.objects.filter(is_superuser=True).exists():
            password = secrets.token_urlsafe(12)
            user_model.objects.create_superuser("admin", "", password)
            console.notice(f"First run: admin login 'admin' / '{password}' (shown once; change it in the admin)")
        if token_secret:
            console.notice(f"First run: API token 'default' = {token_secret} (shown once; "
                           "more with ./winni manage winni_token create NAME)")
        return token_secret

    def _wait_ready(self, sup: Supervisor, console: Console, *, started: float, worker: bool) -> tuple[bool, list[str]]:
        """Supervise until Winni is ready (True), or a stop is asked (False): /healthz answers 200
        (the web process listens only once its recall path is warm: winni_site.asgi) and, when a
        worker runs, the worker has reported since this start. A worker that has not reported
        WORKER_WITHIN seconds after the web is up is named in what is still starting."""
        deadline = time.monotonic() + HEALTHY_WITHIN
        report: Any = "no answer"
        web_up_at = None
        while not sup.stop_requests:
            sup.step(0.1)
            health: dict[str, Any] | None = None
            try:
                with urllib.request.urlopen(f"{console.url}/healthz", timeout=1) as answer:
                    health = json.loads(answer.read())
            except urllib.error.HTTPError as exc:
                report = exc.read().decode(errors="replace")[:500]
            except (OSError, ValueError) as exc:
                report = str(exc)
            if health is not None:
                web_up_at = web_up_at or time.monotonic()
                age = (health.get("worker") or {}).get("last_heartbeat_seconds_ago")
                reported = age is not None and age <= time.monotonic() - started
                if not worker or reported:
                    return True, []
                if time.monotonic() - web_up_at > WORKER_WITHIN:
                    return True, ["worker"]
            if deadline and time.monotonic() > deadline:
                console.warn(f"not healthy after {HEALTHY_WITHIN} s ({report}); still trying")
                deadline = 0
        return False, []


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _embedded_servers(data_dir: Path) -> list[Unit]:
    """The embedded PostgreSQL and Redis as units; started again at the same address (socket,
    port) so that the processes using them just reconnect."""
    servers: list[Unit] = []
    if settings.WINNI_EMBEDDED_POSTGRES:
        pgdata = embedded.pg_data_dir(data_dir)
        expected = {key: settings.DATABASES["default"][key] for key in ("HOST", "PORT")}

        def start_postgres() -> None:
            embedded.forget_stale_handles(data_dir)
            found = embedded.postgres_settings(data_dir, shared_buffers=settings.WINNI_PG_SHARED_BUFFERS)
            if {key: found[key] for key in expected} != expected:
                raise RuntimeError(f"PostgreSQL came back at {found['HOST']}:{found['PORT']}, not {expected}")

        def stop_postgres() -> None:
            from django.db import connections

            connections.close_all()
            embedded.stop_postgres(data_dir)

        servers.append(EmbeddedServer("postgres", start=start_postgres, find_pid=lambda: embedded.postmaster_pid(pgdata),
                                      alive=_alive, stop=stop_postgres, log=pgdata / "log"))
    if settings.WINNI_EMBEDDED_REDIS:
        def start_redis() -> None:
            if embedded.redis_url(data_dir, keep_port=True) != settings.REDIS_URL:
                raise RuntimeError(f"Redis came back at another address than {settings.REDIS_URL}")

        servers.append(EmbeddedServer("redis", start=start_redis, find_pid=lambda: embedded.redis_pid(data_dir),
                                      alive=_alive, stop=lambda: embedded.stop_redis(data_dir),
                                      log=embedded.redis_dir(data_dir) / "redis.log"))
    return servers


def _children(options: dict[str, Any], env_for: Any) -> list[Unit]:
    python = sys.executable
    web = [python, "-m", "uvicorn", "winni_site.asgi:application", "--host", settings.WINNI_HOST,
           "--port", str(settings.WINNI_PORT), "--no-access-log", "--lifespan", "on", "--log-level", "warning"]
    if int(options["web_workers"]) > 1:
        web += ["--workers", str(options["web_workers"])]
    commands = {"web": web}
    if not options["no_worker"]:
        # No gossip or mingle: one worker has nobody to talk to, and mingle waits for answers at start.
        commands["worker"] = [python, "-m", "celery", "-A", "winni_site", "--quiet", "worker", "--loglevel", "WARNING",
                              "--concurrency", str(settings.WINNI_WORKER_CONCURRENCY), "-n", "winni@%h",
                              "--without-gossip", "--without-mingle"]
        commands["beat"] = [python, "-m", "celery", "-A", "winni_site", "--quiet", "beat", "--loglevel", "WARNING",
                            "--schedule", settings.CELERY_BEAT_SCHEDULE_FILENAME]
    broken = os.environ.get(BROKEN_CHILD)
    if broken in commands:
        commands[broken] = [python, "-c", f"import sys; print('{broken}: deliberately broken ({BROKEN_CHILD})', "
                                          "file=sys.stderr); sys.exit(3)"]
    return [ChildProcess(name, argv, env_for(name), cwd=settings.BASE_DIR) for name, argv in commands.items()]


class Console:
    """What `winni run` prints, and its records in the log file (logger winni.run)."""

    def __init__(self, command: BaseCommand, *, verbose: bool) -> None:
        import logging

        self.command = command
        self.verbose = verbose
        self.level = CONSOLE_LEVELS["info" if verbose else settings.WINNI_LOG_CONSOLE_LEVEL.lower()]
        self.log = logging.getLogger("winni.run")
        self.url = f"http://{settings.WINNI_HOST}:{settings.WINNI_PORT}"

    def child_env(self, name: str) -> dict[str, str]:
        env = {**os.environ, "WINNI_DATA_DIR": str(settings.DATA_DIR), "PYTHONUNBUFFERED": "1", "WINNI_PROCESS": name,
               "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")}
        if self.verbose:
            env["WINNI_LOG_CONSOLE_LEVEL"] = "INFO"
        return env

    def _write(self, line: str, *, error: bool = False) -> None:
        stream = self.command.stderr if error else self.command.stdout
        stream.write(line)
        stream.flush()

    def say(self, message: str) -> None:
        self._write(f"winni: {message}")
        self.log.info(message)

    def notice(self, message: str) -> None:
        self._write(self.command.style.WARNING(message))

    def warn(self, message: str) -> None:
        self._write(f"winni: {message}", error=True)
        self.log.warning(message)

    def error(self, message: str) -> None:
        self._write("winni: " + message.replace("\n", "\nwinni: "), error=True)
        self.log.error(message.splitlines()[0], extra={"fields": {"detail": message}})

    def event(self, what: str, unit: Unit, fields: dict[str, Any]) -> None:
        if what == "restarting":
            self.warn(f"{unit.name} {fields['reason']} after {fields['uptime_seconds']:g} s; "
                      f"starting it again in {fields['restart_in_seconds']:g} s")
        self.log.log(40 if what == "gave up" else 30, f"{unit.name} {what}", extra={"fields": fields})

    def child_line(self, unit: Unit, line: str) -> None:
        """A line a child printed. Its JSON log lines are in the log file already (it wrote them);
        anything else (tracebacks, Celery's and Python's warnings) goes there now."""
        record = _json_line(line)
        if record is None:
            self.log.info(line, extra={"fields": {"unit": unit.name, "output": True}})
            if self.verbose:
                self._write(f"{unit.name} | {line}")
            return
        if not self.verbose and record.get("logger") == "py.warnings" and ROOT_WARNING in str(record.get("msg")):
            return  # Celery's warning about running as root: in the log file only (a calm console)
        if CONSOLE_LEVELS.get(str(record.get("level")), 30) >= self.level:
            self._write(_human(unit.name, record), error=record.get("level") in ("error", "critical"))

    def announce(self, token: str | None, seconds: float, running: list[str], starting: list[str]) -> None:
        url = self.url
        self.command.stdout.write(self.command.style.SUCCESS(
            f"Winni is up in {seconds:.1f} s at {url} (admin: {url}/admin/, API docs: {url}/api/docs/, "
            f"health: {url}/healthz)"))
        if starting:
            self.command.stdout.write(f"  still starting: {', '.join(starting)} (background jobs wait for it; "
                                      "prompts, searches and capture are answered now)")
        parts = [", ".join(running)]
        if settings.WINNI_SETTINGS_FILE and str(settings.WINNI_SETTINGS_FILE) != os.devnull:
            parts.append(f"settings: {settings.WINNI_SETTINGS_FILE}")
        if settings.WINNI_LOG_FILE != "off":
            parts.append(f"log: {settings.WINNI_LOG_FILE}" + ("" if self.verbose else " (here: warnings only)"))
        self.command.stdout.write("  " + " · ".join(parts))
        self.command.stdout.write("Connect Claude Code:")
        self.command.stdout.write(f'  claude mcp add --scope user --transport http winni {url}/mcp --header "Authorization: Bearer '
                                  f'{token or "<your token>"}"')
        self.command.stdout.write("Press Ctrl-C to stop.")


def _json_line(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) and "level" in record and "msg" in record else None


# Celery warns on every start when the worker runs as root (a container, a single-user VM).
ROOT_WARNING = "running the worker with superuser privileges"


def _human(unit: str, record: dict[str, Any]) -> str:
    """A JSON log line for people: time, process, level, message, its fields; an exception's last line."""
    skip = {"ts", "level", "logger", "msg", "request_id", "process", "pid", "exc"}
    fields = " ".join(f"{key}={value}" for key, value in record.items() if key not in skip)
    text = f"{str(record.get('ts', ''))[11:19]} {unit} {record['level']} {record.get('logger', '')}: {record['msg']}"
    if fields:
        text += f" ({fields})"
    if record.get("exc"):
        text += f" — {str(record['exc']).strip().splitlines()[-1]}"
    return text[:1000]
