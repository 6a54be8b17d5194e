"""The JSON log file (WINNI_LOG_FILE, by default <data dir>/logs/winni.log), written by every Winni
process at once — web (one or more uvicorn workers), Celery worker (and its pool processes), beat,
`./winni run` itself and `./winni manage` commands — and rotated by size.

Why not logging's RotatingFileHandler: with several writers, the process that rotates renames the
file while the others keep appending to the renamed one (their lines land in the backup, and the
next rotation by another process clobbers it). Here every write takes an exclusive lock (flock on
`<file>.lock`), reopens the file if another process rotated it meanwhile (its inode changed),
rotates when the line would cross WINNI_LOG_MAX_BYTES (winni.log → winni.log.1 → … →
winni.log.N, N = WINNI_LOG_BACKUPS, the oldest dropped), then appends the line: lines are never
split or lost between processes, and the files never exceed the limit by more than one line.
The lock costs ≈ 12 µs per line more than logging's FileHandler (docs/always-on.md).
"""
from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from core.logs import JsonFormatter

PROCESS_KIND = os.environ.get("WINNI_PROCESS", "manage")


class ProcessJsonFormatter(JsonFormatter):
    """Winni's JSON line plus which process wrote it (WINNI_PROCESS: web, worker, beat, run; else
    "manage") and its pid: several processes share the file."""

    def format(self, record: logging.LogRecord) -> str:
        record.fields = {"process": PROCESS_KIND, "pid": os.getpid(), **getattr(record, "fields", {})}
        return super().format(record)


class SharedRotatingFileHandler(logging.Handler):
    def __init__(self, filename: str, max_bytes: int, backups: int) -> None:
        super().__init__()
        self.path = Path(filename)
        self.max_bytes = max_bytes
        self.backups = backups
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._pid = -1
        self._fd = self._lock_fd = -1

    def _ensure_open(self) -> None:
        """Open per process: an flock belongs to the open file, which a fork (Celery's pool)
        shares with the parent, and shared, it would exclude nothing between the two."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._lock_fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._fd = self._open()

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.write((self.format(record) + "\n").encode("utf-8", "replace"))
        except Exception:
            self.handleError(record)

    def write(self, data: bytes) -> None:
        """Append `data` under the lock, rotating first when it would cross the size limit."""
        self._ensure_open()
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            try:
                current = os.stat(self.path)
                if current.st_ino != os.fstat(self._fd).st_ino:
                    raise FileNotFoundError  # rotated by another process
            except FileNotFoundError:
                os.close(self._fd)
                self._fd = self._open()
                current = os.fstat(self._fd)
            if current.st_size and current.st_size + len(data) > self.max_bytes:
                rotate(self.path, self.backups)
                os.close(self._fd)
                self._fd = self._open()
            os.write(self._fd, data)
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._pid == os.getpid():
            for fd in (self._fd, self._lock_fd):
                os.close(fd)
            self._pid = -1
        super().close()


def rotate(path: Path, backups: int) -> None:
    """winni.log → winni.log.1, .1 → .2, …; the one beyond `backups` is dropped (0: no backups)."""
    if backups < 1:
        path.unlink(missing_ok=True)
        return
    for index in range(backups - 1, 0, -1):
        older = path.with_name(f"{path.name}.{index}")
        if older.exists():
            os.replace(older, path.with_name(f"{path.name}.{index + 1}"))
    os.replace(path, path.with_name(f"{path.name}.1"))


def log_files(path: Path) -> list[Path]:
    """The log file and its backups, newest first."""
    found = [path] if path.exists() else []
    index = 1
    while path.with_name(f"{path.name}.{index}").exists():
        found.append(path.with_name(f"{path.name}.{index}"))
        index += 1
    return found
