"""Helpers for talking to a running Winni the way real clients do (tests and bench/ share them)."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from winni_site.embedded import file_lock  # noqa: F401 - the tests' npm installs take it from here

ROOT = Path(__file__).resolve().parent.parent




def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def database_url(settings_dict: dict[str, Any]) -> str:
    """A DATABASE_URL for child processes that must use the same (test) database as this one."""
    return (
        f"postgresql://{settings_dict['USER']}:{settings_dict['PASSWORD']}@/{settings_dict['NAME']}"
        f"?host={settings_dict['HOST']}&port={settings_dict['PORT']}"
    )


def child_env(settings_dict: dict[str, Any], **extra: str) -> dict[str, str]:
    from django.conf import settings

    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "winni_site.settings.test"),
        "DATABASE_URL": database_url(settings_dict),
        "REDIS_URL": settings.REDIS_URL,
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


class LiveServer:
    """uvicorn serving winni_site.asgi in a child process, on a free loopback port."""

    def __init__(self, env: dict[str, str], port: int | None = None, workers: int = 1) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(Path(os.environ.get("WINNI_DATA_DIR", "/tmp")) / f"uvicorn-{self.port}.log", "wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "winni_site.asgi:application", "--host", "127.0.0.1",
             "--port", str(self.port), "--no-access-log", "--lifespan", "on",
             *(["--workers", str(workers)] if workers > 1 else [])],
            cwd=ROOT, env={**env, "WINNI_PORT": str(self.port)}, stdout=self.log, stderr=subprocess.STDOUT,
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {Path(self.log.name).read_text()[-3000:]}")
            try:
                urllib.request.urlopen(self.url + "/healthz", timeout=1)
                return
            except urllib.error.HTTPError:
                return  # 503 still means the server answers
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("server did not start in time")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


def wait_for(predicate: Any, what: str, timeout: float = 90) -> Any:
    """Poll `predicate` until it returns something truthy (returned); fail the test after `timeout`."""
    import pytest

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


class McpError(AssertionError):
    pass


class McpClient:
    """Synchronous facade over the official `mcp` client speaking streamable HTTP.

    mode="legacy" is the initialize handshake Claude Code uses (2025-11-25); "auto" is the SDK's
    modern discovery."""

    def __init__(self, url: str, token: str | None, mode: str = "legacy") -> None:
        self.url = url.rstrip("/") + "/mcp"
        self.token = token
        self.mode = mode

    def _run(self, fn: Any) -> Any:
        async def main() -> Any:
            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
                async with Client(streamable_http_client(self.url, http_client=http), mode=self.mode) as client:
                    return await fn(client)

        return asyncio.run(main())

    def list_tools(self) -> list[str]:
        return [tool.name for tool in self._run(lambda c: c.list_tools()).tools]

    def call_raw(self, name: str, arguments: dict[str, Any]) -> Any:
        return self._run(lambda c: c.call_tool(name, arguments))

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        """Call a tool expecting success; returns its structured content (or parsed text)."""
        result = self.call_raw(name, arguments or {})
        if result.is_error:
            raise McpError(f"{name} failed: {result_text(result)}")
        return structured(result)

    def call_error(self, name: str, arguments: dict[str, Any]) -> str:
        """Call a tool expecting an isError result; returns its message."""
        result = self.call_raw(name, arguments)
        if not result.is_error:
            raise McpError(f"{name} unexpectedly succeeded: {structured(result)}")
        return result_text(result)


def result_text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def structured(result: Any) -> Any:
    if result.structured_content is not None:
        content = result.structured_content
        # Non-object returns (None, lists) arrive wrapped as {"result": ...}.
        if set(content) == {"result"}:
            return content["result"]
        return content
    text = result_text(result)
    return json.loads(text) if text else None


def start_celery_worker(env: dict[str, str], *, pool: str = "solo", concurrency: int = 1) -> subprocess.Popen:
    """A real Celery worker process for this project (its own node name)."""
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "winni_site", "worker", "--pool", pool, "--concurrency",
         str(concurrency), "--loglevel", "WARNING", "-n", f"test-{time.time_ns()}@%h"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def stop_process(process: subprocess.Popen, timeout: float = 15) -> None:
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()


def kill_postgres(pgdata: Path) -> None:
    """SIGKILL the postmaster and every one of its processes at once, like a power cut."""
    import psutil

    postmaster = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
    for process in [postmaster, *postmaster.children(recursive=True)]:
        try:
            process.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass  # a backend that died with the postmaster


def processes_using(data_dir: str) -> list:
    """Live processes started for a data dir (by command line or WINNI_DATA_DIR)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline", "environ", "status"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            environ = proc.info["environ"] or {}
        except (psutil.Error, TypeError):
            continue
        if proc.info["status"] != psutil.STATUS_ZOMBIE and (
                data_dir in cmdline or environ.get("WINNI_DATA_DIR") == data_dir):
            found.append(proc)
    return found


class WinniRun:
    """`manage.py winni_run` (what `./winni run` execs) in its own data dir, with the embedded
    PostgreSQL and Redis; its console goes to a file. Tests and bench/recovery.py share it."""

    def __init__(self, data_dir: Path, *, port: int | None = None, args: tuple[str, ...] = (), **settings: str) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
        env.update({"WINNI_DATA_DIR": str(data_dir), "WINNI_PORT": str(self.port),
                    "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev", **settings})
        self.console_path = data_dir / "console.txt"
        with open(self.console_path, "wb") as console:
            self.process = subprocess.Popen([sys.executable, "manage.py", "winni_run", *args], cwd=ROOT, env=env,
                                            stdout=console, stderr=subprocess.STDOUT)

    def console(self) -> str:
        return self.console_path.read_text(errors="replace")

    def token(self) -> str:
        for line in self.console().splitlines():
            if "API token 'default' = " in line:
                return line.split(" = ", 1)[1].split()[0]
        raise AssertionError(f"no first-run token in the console:\n{self.console()}")

    def status(self) -> dict[str, Any]:
        try:
            return json.loads((self.data_dir / "run" / "winni.json").read_text())
        except (OSError, ValueError):
            return {"units": {}}

    def health(self) -> dict[str, Any] | None:
        """/healthz's report when it answers 200, else None."""
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                return json.load(response)
        except (OSError, ValueError):
            return None

    def wait_up(self, timeout: float = 120, worker: bool = True) -> dict[str, Any]:
        """Until /healthz is 200 with a fresh worker heartbeat (everything runs; without `worker`,
        200 is enough)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"winni_run exited with {self.process.returncode}:\n{self.console()}")
            report = self.health()
            if report and (report["status"] == "ok" or not worker):
                return report
            time.sleep(0.2)
        raise AssertionError(f"winni_run never became healthy:\n{self.console()}")

    def kill(self, unit: str) -> tuple[int, float]:
        """SIGKILL one unit's process (PostgreSQL: its postmaster); returns (pid, when)."""
        pid = self.status()["units"][unit]["pid"]
        os.kill(pid, signal.SIGKILL)
        return pid, time.time()

    def recovered(self, unit: str, old_pid: int, killed_at: float) -> bool:
        """`unit` runs as a new process and Winni is healthy again. For the parts on the task path
        (worker, beat, Redis) that includes a worker heartbeat sent after the kill (beat queued it
        through Redis, the worker ran it); for beat, after the new beat started."""
        info = self.status()["units"].get(unit, {})
        if info.get("state") != "running" or info.get("pid") in (None, old_pid):
            return False
        report = self.health()
        if report is None:
            return False
        if unit in ("worker", "beat", "redis"):
            after = info["since"] if unit == "beat" else killed_at
            age = report.get("worker", {}).get("last_heartbeat_seconds_ago")
            return report["worker"]["status"] == "ok" and age is not None and age < time.time() - after
        return True

    def stop(self, timeout: float = 90) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def celery_reconnect(app: Any) -> None:
    """Drop the Celery app's cached broker connections, producers and result backend, so the next
    call builds them from its current configuration. A test that points the app at another broker
    (`memory://`) would otherwise leave its pool to every later test of the process; which tests
    share a process changes with pytest-xdist. (Not `app.close()`: that also takes the app off
    Celery's list of active apps, and a `shared_task` module imported later in the process is then
    never registered with it: NotRegistered.)"""
    app._pool = None
    amqp = app.__dict__.get("amqp")
    if amqp is not None:
        amqp._producer_pool = None
    app._backend_cache = None
    if getattr(app._local, "backend", None) is not None:
        app._local.backend = None
