"""Run everything: the embedded PostgreSQL and Redis (unless DATABASE_URL / REDIS_URL are set),
migrations, first-run credentials, uvicorn (Django + MCP), a Celery worker and Celery beat.
Ctrl-C (or SIGTERM) stops the children, then the embedded servers: nothing is left running."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from winni_site import auth, embedded
from winni_site.models import ApiToken

STOP_GRACE_SECONDS = 15


class Command(BaseCommand):
    help = "Start Winni: web server (Django + MCP at /mcp), Celery worker and beat, embedded services."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-worker", action="store_true", help="do not start the Celery worker and beat")
        parser.add_argument("--web-workers", type=int, default=settings.WINNI_WEB_WORKERS)

    def handle(self, *args: object, **options: object) -> None:
        started = time.monotonic()
        data_dir: Path = settings.DATA_DIR
        if settings.WINNI_EMBEDDED_POSTGRES:
            embedded.forget_stale_handles(data_dir)
        call_command("migrate", interactive=False, verbosity=0)
        first_token = self._first_run_credentials()

        host, port = settings.WINNI_HOST, settings.WINNI_PORT
        env = {**os.environ, "WINNI_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
        env.setdefault("DJANGO_SETTINGS_MODULE", os.environ.get("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev"))
        children: list[tuple[str, subprocess.Popen[bytes]]] = []

        def spawn(name: str, argv: list[str]) -> None:
            # Own session: Ctrl-C reaches only us, and we stop the children in order.
            children.append((name, subprocess.Popen(argv, env=env, start_new_session=True)))

        stopping = False

        def request_stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, request_stop)
        signal.signal(signal.SIGTERM, request_stop)
        try:
            web = [sys.executable, "-m", "uvicorn", "winni_site.asgi:application", "--host", host, "--port", str(port),
                   "--no-access-log", "--lifespan", "on"]
            if int(options["web_workers"]) > 1:  # type: ignore[call-overload]
                web += ["--workers", str(options["web_workers"])]
            spawn("web", web)
            if not options["no_worker"]:
                spawn("worker", [sys.executable, "-m", "celery", "-A", "winni_site", "worker", "--loglevel", "WARNING",
                                 "--concurrency", str(settings.WINNI_WORKER_CONCURRENCY), "-n", "winni@%h"])
                spawn("beat", [sys.executable, "-m", "celery", "-A", "winni_site", "beat", "--loglevel", "WARNING",
                               "--schedule", settings.CELERY_BEAT_SCHEDULE_FILENAME])
            self._wait_healthy(host, port, children, lambda: stopping)
            if not stopping:
                self._announce(host, port, first_token, time.monotonic() - started)
            while not stopping:
                for name, child in children:
                    if child.poll() is not None:
                        self.stderr.write(f"winni: {name} exited with code {child.returncode}; stopping")
                        stopping = True
                time.sleep(0.5)
        finally:
            self._stop_children(children)
            if settings.WINNI_EMBEDDED_REDIS:
                embedded.stop_redis(data_dir)
            if settings.WINNI_EMBEDDED_POSTGRES:
                from django.db import connections

                connections.close_all()
                embedded.stop_postgres(data_dir)
            self.stdout.write("winni: stopped")

    def _first_run_credentials(self) -> str | None:
        """On the first run, make an API token and an admin login and print them once."""
        token_secret = None
        if not ApiToken.objects.exists():
            _, token_secret = auth.token_create(name="default")
        user_model = get_user_model()
        if not user_model.objects.filter(is_superuser=True).exists():
            password = secrets.token_urlsafe(12)
            user_model.objects.create_superuser("admin", "", password)
            self.stdout.write(self.style.WARNING(
                f"First run: admin login 'admin' / '{password}' (shown once; change it in the admin)"))
        if token_secret:
            self.stdout.write(self.style.WARNING(
                f"First run: API token 'default' = {token_secret} (shown once; "
                "more with ./winni manage winni_token create NAME)"))
        return token_secret

    def _wait_healthy(self, host: str, port: int, children: list, stopping) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not stopping():
            if any(child.poll() is not None for _, child in children):
                return
            try:
                with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)

    def _announce(self, host: str, port: int, token: str | None, seconds: float) -> None:
        url = f"http://{host}:{port}"
        self.stdout.write(self.style.SUCCESS(f"Winni is up in {seconds:.1f} s at {url} (admin: {url}/admin/, "
                                             f"API docs: {url}/api/docs/, health: {url}/healthz)"))
        self.stdout.write("Connect Claude Code:")
        self.stdout.write(f'  claude mcp add --transport http winni {url}/mcp --header "Authorization: Bearer '
                          f'{token or "<your token>"}"')
        self.stdout.write("Press Ctrl-C to stop.")

    def _stop_children(self, children: list[tuple[str, subprocess.Popen[bytes]]]) -> None:
        for _, child in reversed(children):
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for _, child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
