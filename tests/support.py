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
