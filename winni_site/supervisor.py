"""Keeps `./winni run`'s parts running: the web, worker and beat processes and the embedded
PostgreSQL and Redis servers ("units").

A unit that stops unexpectedly is started again after a pause that doubles with each quick exit
(1 s, 2 s, 4 s … 60 s); once it has stayed up SETTLE seconds (10) it counts as started well and the
pause starts from 1 s again. Five exits in a row, each within those seconds of its start, mean it
cannot run (a broken command, a port taken, a bad setting): the supervisor gives up, naming the
unit, its exit status and the last lines it printed, and everything is stopped.

One thread, no polling of child output: a selector waits on the children's output pipes (stdout
and stderr merged) for at most a quarter of a second, then the supervisor reaps exited processes
and looks at each unit. On Linux it is a child subreaper (prctl), so the daemonised PostgreSQL and
Redis become its children when their launcher exits: a killed server is noticed and reaped at
once (an unreaped zombie postmaster looks alive to pg_ctl). Children get PR_SET_PDEATHSIG: if the
supervisor itself is killed, they are told to stop rather than hold the port for the next one.

Django-free: the command (`winni_run`) builds the units and decides what reaches the console.
"""
from __future__ import annotations

import ctypes
import fcntl
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

# When this process began (manage.py winni_run imports this module first): "up in N s" counts from it.
PROCESS_STARTED = time.monotonic()

FIRST_DELAY = 1.0
MAX_DELAY = 60.0
SETTLE = 10.0
GIVE_UP_AFTER = 5
TAIL_LINES = 20
STOP_GRACE = 15.0
LOCK_FILE, STATUS_FILE = "winni.lock", "winni.json"
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def _stop_with_parent() -> None:
    """Runs in the child before exec (Linux): SIGTERM when the supervisor dies."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass(frozen=True)
class Exit:
    code: int | None  # a signal is negative; None: not our child, its status is unknown
    note: str = ""  # instead of an exit status: why it could not start

    def describe(self) -> str:
        if self.note:
            return self.note
        if self.code is None:
            return "is gone (not a child of `winni run`: its exit status is unknown)"
        if self.code < 0:
            try:
                name = signal.Signals(-self.code).name
            except ValueError:
                name = f"signal {-self.code}"
            return f"was killed by {name} (exit code {self.code})"
        return f"exited with code {self.code}"


class Unit:
    """Something `winni run` keeps running. Subclasses say how to start it, whether it is gone, and
    how to stop it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = "new"  # running, waiting (to restart), stopped
        self.started_at = 0.0
        self.started_wall = 0.0
        self.settled = False
        self.delay = FIRST_DELAY
        self.quick_exits = 0
        self.restarts = 0
        self.restart_at = 0.0
        self.last_exit: Exit | None = None
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)

    def launch(self) -> None:
        raise NotImplementedError

    def pid(self) -> int | None:
        raise NotImplementedError

    def poll(self, reaped: dict[int, int]) -> Exit | None:
        raise NotImplementedError

    def terminate(self) -> None:
        raise NotImplementedError


class ChildProcess(Unit):
    """A command (uvicorn, Celery) in its own session, its output on one pipe."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        super().__init__(name)
        self.argv, self.env, self.cwd = argv, env, cwd
        self.process: subprocess.Popen[bytes] | None = None
        self.partial = b""

    def launch(self) -> None:
        self.partial = b""
        self.process = subprocess.Popen(
            self.argv, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_stop_with_parent)
        assert self.process.stdout is not None
        os.set_blocking(self.process.stdout.fileno(), False)

    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def poll(self, reaped: dict[int, int]) -> Exit | None:
        if self.process is None:
            return None
        if self.process.returncode is None and self.process.pid in reaped:
            self.process.returncode = reaped.pop(self.process.pid)
        if self.process.returncode is None:
            return None
        return Exit(self.process.returncode)

    def _signal_group(self, signum: int) -> None:
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signum)  # its session's group: uvicorn's and Celery's own children too
            except (ProcessLookupError, PermissionError):
                pass

    def terminate(self) -> None:
        # The main process only: Celery's and uvicorn's own shutdown lets their children finish
        # what they are doing (a Celery warm shutdown waits for the running task). SIGTERM to the
        # whole group killed the pool's child mid-task (a checkpoint at the end of a session that
        # just ended: WorkerLostError in the log at every ordinary stop). What is left of the
        # group when the main process has exited is killed (stop_all).
        if self.process is not None and self.process.returncode is None:
            try:
                self.process.send_signal(signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)

    def gone(self, reaped: dict[int, int]) -> bool:
        """Exited, and no process of its group is left (a killed Celery leaves its pool behind)."""
        if self.poll(reaped) is None or self.process is None:  # (poll: None when never started)
            return False
        try:
            os.killpg(self.process.pid, 0)
            return False
        except (ProcessLookupError, PermissionError):
            return True


def _reap_child(pid: int, reaped: dict[int, int]) -> bool:
    """The exit status of `pid` when it is a child of this process that has died (a zombie), into
    `reaped`: a server killed between the supervisor's reap and its look at the server is reported
    as killed, with its signal, not as gone with its status unknown. True when it is a child that
    has not finished dying: a killed process is neither alive nor waitable while the kernel tears
    it down, and read then it would be reported gone with its status unknown."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False  # not a child of this process, or reaped already
    if done == pid:
        reaped[pid] = os.waitstatus_to_exitcode(status)
        return False
    return True


class EmbeddedServer(Unit):
    """A daemon started through a function (the embedded PostgreSQL or Redis); found by its pid."""

    def __init__(self, name: str, *, start: Callable[[], None], find_pid: Callable[[], int | None],
                 alive: Callable[[int], bool], stop: Callable[[], None], log: Path) -> None:
        super().__init__(name)
        self._start, self._find_pid, self._alive, self._stop = start, find_pid, alive, stop
        self.log = log
        self._pid: int | None = None

    def read_tail(self) -> None:
        """Its own log's last lines (a server's output goes there, not to a pipe)."""
        try:
            with open(self.log, "rb") as handle:
                handle.seek(max(0, handle.seek(0, os.SEEK_END) - 16384))
                lines = handle.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return
        self.tail.clear()
        self.tail.extend(line for line in lines[-TAIL_LINES:] if line.strip())

    def launch(self) -> None:
        self._start()
        self._pid = self._find_pid()

    def pid(self) -> int | None:
        return self._pid

    def poll(self, reaped: dict[int, int]) -> Exit | None:
        if self._pid is not None and self._pid not in reaped and not self._alive(self._pid):
            if _reap_child(self._pid, reaped):  # it died after the supervisor's last reap
                return None  # still dying: its status next time
        if self._pid in reaped:
            return Exit(reaped.pop(self._pid))
        if self._pid is not None and self._alive(self._pid):
            return None
        current = self._find_pid()
        if current is not None and current != self._pid and self._alive(current):
            self._pid = current  # started again by another process (one loading settings meanwhile)
            return None
        return Exit(None)

    def terminate(self) -> None:
        self._stop()


class GaveUp(Exception):
    def __init__(self, unit: Unit) -> None:
        self.unit = unit
        assert unit.last_exit is not None
        lines = "\n".join(f"    {line}" for line in unit.tail) or "    (it printed nothing)"
        super().__init__(
            f"{unit.name} stopped {unit.quick_exits} times in a row, each time within {SETTLE:g} s of its start "
            f"(the last time it {unit.last_exit.describe()}); giving up. Its last output:\n{lines}")


class Supervisor:
    def __init__(self, units: list[Unit], *, on_line: Callable[[Unit, str], None],
                 on_event: Callable[[str, Unit, dict[str, Any]], None], on_change: Callable[[], None]) -> None:
        self.units = units
        self.on_line, self.on_event, self.on_change = on_line, on_event, on_change
        self.selector = selectors.DefaultSelector()
        self.reaped: dict[int, int] = {}
        self.stop_requests = 0

    # --- start and watch ---------------------------------------------------------------------

    def adopt(self, unit: Unit) -> None:
        """A unit that already runs (the embedded servers the settings started)."""
        unit.launch()
        self._running(unit)

    def start(self, unit: Unit) -> None:
        try:
            unit.launch()
        except Exception as exc:  # noqa: BLE001 - any failure to start is this unit's exit
            unit.started_at = time.monotonic()
            self._exited(unit, Exit(None, note=f"could not start ({type(exc).__name__}: {str(exc)[:500]})"))
            return
        if isinstance(unit, ChildProcess) and unit.process and unit.process.stdout:
            self.selector.register(unit.process.stdout, selectors.EVENT_READ, unit)
        self._running(unit)

    def _running(self, unit: Unit) -> None:
        unit.state = "running"
        unit.started_at = time.monotonic()
        unit.started_wall = time.time()
        unit.settled = False
        self.on_change()

    def step(self, timeout: float = 0.25) -> None:
        """Read output for up to `timeout` seconds, then reap, restart and settle units.
        Raises GaveUp when a unit keeps failing at start."""
        self._read(timeout)
        self._reap()
        now = time.monotonic()
        for unit in self.units:
            if unit.state == "running":
                exit_status = unit.poll(self.reaped)
                if exit_status is not None:
                    self._exited(unit, exit_status)
                elif not unit.settled and now - unit.started_at >= SETTLE:
                    unit.settled, unit.delay, unit.quick_exits = True, FIRST_DELAY, 0
            elif unit.state == "waiting" and now >= unit.restart_at:
                unit.restarts += 1
                self.start(unit)
        self.reaped.clear()  # orphans adopted as subreaper (a killed Celery's pool), nobody waits for them

    def _exited(self, unit: Unit, exit_status: Exit) -> None:
        if isinstance(unit, ChildProcess):
            while self._read_from(unit):  # its last lines say why
                pass
            unit.kill()  # what is left of its group (uvicorn or Celery workers) must not hold the port
        elif isinstance(unit, EmbeddedServer):
            unit.read_tail()
        uptime = time.monotonic() - unit.started_at
        unit.last_exit = exit_status
        unit.quick_exits = 0 if unit.settled else unit.quick_exits + 1
        fields = {"unit": unit.name, "unit_pid": unit.pid(), "exit_code": exit_status.code,
                  "uptime_seconds": round(uptime, 1), "restarts": unit.restarts, "quick_exits": unit.quick_exits,
                  "last_output": list(unit.tail)[-5:]}
        if unit.quick_exits >= GIVE_UP_AFTER:
            unit.state = "stopped"
            self.on_event("gave up", unit, fields)
            self.on_change()
            raise GaveUp(unit)
        unit.state = "waiting"
        unit.restart_at = time.monotonic() + unit.delay
        self.on_event("restarting", unit, {**fields, "reason": exit_status.describe(),
                                           "restart_in_seconds": unit.delay})
        unit.delay = min(unit.delay * 2, MAX_DELAY)
        self.on_change()

    # --- output --------------------------------------------------------------------------------

    def _read(self, timeout: float) -> None:
        if not self.selector.get_map():
            time.sleep(timeout)
            return
        for key, _ in self.selector.select(timeout):
            self._read_from(key.data)

    def _read_from(self, unit: ChildProcess) -> bool:
        """Pass on the complete lines waiting in its pipe; False when nothing more is there now."""
        pipe = unit.process.stdout if unit.process else None
        if pipe is None or pipe.closed:
            return False
        try:
            chunk = os.read(pipe.fileno(), 65536)
        except BlockingIOError:
            return False
        if not chunk:  # end of output: the process (and all it started) closed the pipe
            self.selector.unregister(pipe)
            pipe.close()
            chunk = b"\n" if unit.partial else b""
        *lines, unit.partial = (unit.partial + chunk).split(b"\n")
        if len(unit.partial) > 1 << 20:  # a runaway line without an end
            lines, unit.partial = [*lines, unit.partial], b""
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip("\r")
            if line.strip():
                unit.tail.append(line)
                self.on_line(unit, line)
        return not pipe.closed

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.reaped[pid] = os.waitstatus_to_exitcode(status)

    # --- stop ------------------------------------------------------------------------------------

    def request_stop(self, signum: int = 0, frame: Any = None) -> None:
        self.stop_requests += 1

    def stop_all(self) -> None:
        """Processes first (newest first; SIGTERM, then SIGKILL after STOP_GRACE seconds or at
        another Ctrl-C), then the servers they use."""
        processes = [u for u in self.units if isinstance(u, ChildProcess) and u.state == "running"]
        for unit in reversed(processes):
            unit.terminate()
        requests, killed = self.stop_requests, False
        deadline = time.monotonic() + STOP_GRACE
        while processes and time.monotonic() < deadline + STOP_GRACE:
            self._read(0.1)
            self._reap()
            for unit in list(processes):
                if unit.poll(self.reaped) is not None:
                    unit.kill()  # leftovers of its group
                    if unit.gone(self.reaped):
                        processes.remove(unit)
            if processes and not killed and (time.monotonic() > deadline or self.stop_requests > requests):
                for unit in processes:
                    unit.kill()
                killed = True
            self.reaped.clear()
        for server in reversed([u for u in self.units if isinstance(u, EmbeddedServer) and u.state != "new"]):
            server.terminate()
        for each in self.units:
            each.state = "stopped"
        self.on_change()


# --- the run folder: one `winni run` per data dir, and what it is doing ----------------------


@contextmanager
def single_instance(lock_path: Path) -> Iterator[bool]:
    """True inside when no other `winni run` holds the data dir (the lock dies with its holder)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_status(run_dir: Path, supervisor: Supervisor, **extra: Any) -> None:
    """What runs, since when, restarts so far: read by `./winni service status`, tests and bench."""
    status = {
        **extra,
        "pid": os.getpid(),
        "units": {unit.name: {"state": unit.state, "pid": unit.pid() if unit.state == "running" else None,
                              "since": unit.started_wall or None, "restarts": unit.restarts,
                              "last_exit_code": unit.last_exit.code if unit.last_exit else None}
                  for unit in supervisor.units},
    }
    tmp = run_dir / f".{STATUS_FILE}.tmp-{os.getpid()}"
    tmp.write_text(json.dumps(status, indent=2))
    os.replace(tmp, run_dir / STATUS_FILE)


def read_status(run_dir: Path) -> dict[str, Any] | None:
    """The status of the `winni run` holding this run folder; None when none runs."""
    with single_instance(run_dir / LOCK_FILE) as free:
        if free:
            return None
    try:
        return json.loads((run_dir / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None
