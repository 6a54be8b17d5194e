"""A throw-away Winni for the operations benchmarks: its own data dir (embedded PostgreSQL and
Redis), migrated, a token, and a uvicorn process serving Django + MCP."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@contextmanager
def winni_server(name: str, workers: int = 1, **settings: str) -> Iterator[tuple[object, str, Path]]:
    """Yields (LiveServer, token, data_dir); stops everything and deletes the data dir after.
    `workers` uvicorn processes; `settings` are extra WINNI_* environment variables."""
    # Under TMPDIR when set (parallel benchmark runs each get a directory of their own anyway).
    data_dir = Path(tempfile.mkdtemp(prefix=f"winni-{name}-", dir=tempfile.gettempdir()))
    env = {**os.environ, "WINNI_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev",
           "WINNI_LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1",
           "WINNI_MCP_TOOLSETS": "all",  # the benchmarks call tools of every set (dewey_store_message)
           **settings}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    manage = [sys.executable, str(ROOT / "manage.py")]
    try:
        subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
        token = subprocess.run([*manage, "winni_token", "create", "bench"], env=env, check=True, cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        from tests.support import LiveServer

        server = LiveServer(env, workers=workers)
        try:
            yield server, token, data_dir
        finally:
            server.stop()
    finally:
        code = f"from pathlib import Path; from winni_site import embedded; embedded.stop_all(Path({str(data_dir)!r}))"
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env)
        shutil.rmtree(data_dir, ignore_errors=True)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def process_tree(pid: int) -> list[psutil.Process]:
    process = psutil.Process(pid)
    return [process, *process.children(recursive=True)]


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:  # a backend that ended meanwhile: its time is lost either way
            continue
        total += times.user + times.system
    return total


def server_cpu(server_pid: int, data_dir: Path) -> dict[str, float]:
    """CPU seconds so far of the uvicorn tree and of the embedded PostgreSQL (postmaster and backends)."""
    from winni_site import embedded

    postmaster = embedded.postmaster_pid(embedded.pg_data_dir(data_dir))
    return {"uvicorn": cpu_seconds(process_tree(server_pid)),
            "postgres": cpu_seconds(process_tree(postmaster)) if postmaster else float("nan")}


# Stateless MCP over plain HTTP (no SDK session): what a bench times is the server's work per call.
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "mcp-protocol-version": "2025-11-25"}


def mcp_headers(token: str) -> dict[str, str]:
    return {**MCP_HEADERS, "Authorization": f"Bearer {token}"}


def mcp_rpc(http: Any, url: str) -> Callable[..., Awaitable[dict]]:
    """One JSON-RPC call to `url`/mcp over the httpx client `http`; its result, or exit naming the
    failed call (a bench that times errors measures nothing)."""
    async def rpc(method: str, params: dict | None = None) -> dict:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
        if params is not None:
            body["params"] = params
        response = await http.post(url + "/mcp", json=body)
        answer = response.json()
        if response.status_code != 200 or "error" in answer or answer["result"].get("isError"):
            raise SystemExit(f"{method} {params}: {response.status_code} {response.text[:300]}")
        return answer["result"]

    return rpc


def tool(name: str, **arguments: Any) -> tuple[str, dict]:
    """The (method, params) of an MCP tools/call."""
    return "tools/call", {"name": name, "arguments": arguments}
