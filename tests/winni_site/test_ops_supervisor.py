"""`./winni run` heals (issue #27), with real processes and kill -9:
- each part (web, worker, beat, the embedded PostgreSQL, the embedded Redis) killed in turn while a
  client writes through MCP: healthy again within 10 s each time, no acknowledged write lost;
- a part that fails at once ends, after a few spaced-out tries, with a clear message and exit 1;
- the console stays calm (issue #24 item 10): no Celery banner or warnings, no JSON lines."""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.support import ROOT, McpClient, WinniRun, free_port, processes_using

pytestmark = [pytest.mark.live, pytest.mark.slow]

RECOVERY_SECONDS = 10  # the bound
UNITS = ["web", "worker", "beat", "postgres", "redis"]


@pytest.fixture
def data_dir():
    path = Path(tempfile.mkdtemp(prefix="winni-sup-", dir="/tmp"))
    yield path
    for proc in processes_using(str(path)):
        proc.kill()
    shutil.rmtree(path, ignore_errors=True)


class Writer(threading.Thread):
    """Stores numbered messages through MCP until stopped; remembers the ones acknowledged."""

    def __init__(self, url: str, token: str) -> None:
        super().__init__(daemon=True)
        self.client = McpClient(url, token)
        self.conversation = self.client.call("dewey_begin_conversation", {"session_id": "always-on"})["conversation_id"]
        self.acked: list[str] = []
        self.failures = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stopped.is_set():
            content = f"write {n}"
            n += 1
            try:
                self.client.call("dewey_store_message", {"conversation_id": self.conversation, "role": "user",
                                                         "content": content})
                self.acked.append(content)
            except Exception:  # noqa: BLE001 - the server is down for a moment: not acknowledged
                self.failures += 1
                time.sleep(0.2)


def _run_records(data_dir: Path) -> list[str]:
    """The supervisor's own log records: what it saw of each part (for a failure's message)."""
    lines = (data_dir / "logs" / "winni.log").read_text().splitlines()
    return [line for line in lines if '"winni.run"' in line]


def test_each_part_killed_in_turn_comes_back_and_no_acknowledged_write_is_lost(data_dir):
    settings_file = data_dir / "winni.env"
    port = free_port()
    settings_file.write_text(f"# the run's settings come from this file\nWINNI_HEARTBEAT_SECONDS=1\n"
                             f"WINNI_DATA_DIR={data_dir}\nWINNI_PORT={port}\n")
    run = WinniRun(data_dir, port=port, WINNI_ENV_FILE=str(settings_file))
    try:
        run.wait_up()
        writer = Writer(run.url, run.token())
        writer.start()
        took = {}
        for unit in UNITS:
            acked_before = len(writer.acked)
            while len(writer.acked) < acked_before + 5:  # writes are going on at the kill
                time.sleep(0.05)
            pid, killed_at = run.kill(unit)
            deadline = killed_at + RECOVERY_SECONDS
            while not run.recovered(unit, pid, killed_at):
                assert time.time() < deadline, f"{unit} not back within {RECOVERY_SECONDS} s:\n{run.console()}"
                time.sleep(0.1)
            took[unit] = round(time.time() - killed_at, 1)
        writer.stopped.set()
        writer.join(30)
        assert run.process.poll() is None, run.console()

        # Every message whole: a default page cuts long conversations' messages to fit 36,000 characters.
        stored = McpClient(run.url, run.token()).call("dewey_get_conversation", {"conversation_id": writer.conversation,
                                                                                 "max_chars": 2_000_000})
        contents = {message["content"] for message in stored["messages"]}
        lost = [content for content in writer.acked if content not in contents]
        assert lost == [], f"acknowledged but lost: {lost[:5]}"
        assert len(writer.acked) > 50 and writer.failures > 0, (len(writer.acked), writer.failures)  # writes met outages
        print(f"recovered in {took} s; {len(writer.acked)} writes acknowledged, {writer.failures} refused meanwhile")

        console = run.console()
        for unit in UNITS:
            assert f"winni: {unit} was killed by SIGKILL (exit code -9)" in console, (
                f"{unit}: status {run.status()}\nlog: {_run_records(data_dir)}\nconsole: {console[-4000:]}")
        log = [json.loads(line) for line in (data_dir / "logs" / "winni.log").read_text().splitlines()]
        restarts = [record for record in log if record["logger"] == "winni.run" and record["msg"].endswith(" restarting")]
        assert sorted(record["unit"] for record in restarts) == sorted(UNITS)
        assert all(record["exit_code"] == -9 and record["restart_in_seconds"] == 1.0 for record in restarts)

        # `./winni service status` (with the same settings file) sees it running, each part once restarted.
        status = subprocess.run([sys.executable, "-m", "winni_site.service", "status"], cwd=ROOT, capture_output=True,
                                text=True, timeout=120, env={**os.environ, "WINNI_ENV_FILE": str(settings_file)})
        assert status.returncode == 0, status.stdout + status.stderr
        assert f"winni run: running at http://127.0.0.1:{port}, pid {run.process.pid}" in status.stdout
        for unit in UNITS:
            assert re.search(rf"  {unit}: pid \d+, since .* UTC \(up 0 min\), restarts 1", status.stdout), status.stdout
        assert f"last lines of {data_dir / 'logs' / 'winni.log'}:" in status.stdout
    finally:
        code = run.stop()
    console = run.console()
    assert code == 0, console
    _assert_calm(console, run.port)
    time.sleep(0.5)
    assert processes_using(str(data_dir)) == []


def _assert_calm(console: str, port: int) -> None:
    """Issue #24 item 10: the start says what runs and how to connect; no Celery banner, no root
    warning, no JSON log lines (they are in the log file)."""
    assert console.count("First run: admin login 'admin'") == 1
    assert f"claude mcp add --scope user --transport http winni http://127.0.0.1:{port}/mcp" in console
    assert "postgres, redis, web, worker, beat" in console
    for noise in ("-------------- ", "SecurityWarning", "celery beat v", '{"ts"', "INFO:", "Uvicorn running"):
        assert noise not in console, noise


def test_a_part_that_fails_at_once_ends_with_a_clear_message_not_a_busy_loop(data_dir):
    run = WinniRun(data_dir, WINNI_TEST_BROKEN_CHILD="beat")
    code = run.process.wait(120)
    console = run.console()
    assert code == 1, console
    assert ("beat stopped 5 times in a row, each time within 10 s of its start (the last time it exited with "
            "code 3); giving up. Its last output:") in console
    assert "beat: deliberately broken (WINNI_TEST_BROKEN_CHILD)" in console  # its last output
    assert "winni: stopped" in console
    # Spaced out: 1, 2, 4, 8 s between the tries, not a busy loop.
    log = [json.loads(line) for line in (data_dir / "logs" / "winni.log").read_text().splitlines()]
    tries = [record for record in log if record.get("unit") == "beat" and record["msg"] in ("beat restarting", "beat gave up")]
    assert [record.get("restart_in_seconds") for record in tries] == [1.0, 2.0, 4.0, 8.0, None]
    times = [dt.datetime.strptime(record["ts"], "%Y-%m-%dT%H:%M:%S.%fZ") for record in tries]
    for before, after, record in zip(times, times[1:], tries):
        assert (after - before).total_seconds() >= record["restart_in_seconds"] - 0.05
    assert tries[-1]["level"] == "error" and tries[-1]["exit_code"] == 3
    time.sleep(0.5)
    assert processes_using(str(data_dir)) == []


def test_one_run_per_data_dir_and_a_killed_supervisor_leaves_nothing_in_the_way(data_dir):
    first = WinniRun(data_dir)
    first.wait_up()
    second = WinniRun(data_dir)
    assert second.process.wait(120) == 1
    assert f"Winni already runs for the data dir {data_dir} (pid {first.process.pid})" in second.console()
    assert first.process.poll() is None and first.health() is not None  # the first one untouched

    # kill -9 of `winni run` itself (the OOM killer, a crashed terminal): its children are told to
    # stop (PR_SET_PDEATHSIG), and a new run (the service manager's restart) adopts PostgreSQL and
    # Redis and serves on the same port again.
    children = [first.status()["units"][name]["pid"] for name in ("web", "worker", "beat")]
    first.process.send_signal(signal.SIGKILL)
    first.process.wait()
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in children):
        assert time.monotonic() < deadline, "the children outlived their supervisor"
        time.sleep(0.1)
    again = WinniRun(data_dir, port=first.port)
    again.wait_up()
    assert again.stop() == 0, again.console()
    time.sleep(0.5)
    assert processes_using(str(data_dir)) == []


def _alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet is not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_server_killed_after_the_last_reap_is_reported_killed_not_gone(tmp_path):
    """The supervisor reaps its children, then looks at each server: one that died in between is
    a zombie its reap missed, and is still reported with its signal."""
    import psutil

    from winni_site.supervisor import EmbeddedServer

    child = subprocess.Popen(["sleep", "60"])
    server = EmbeddedServer("redis", start=lambda: None, find_pid=lambda: child.pid,
                            alive=lambda pid: psutil.Process(pid).status() != psutil.STATUS_ZOMBIE,
                            stop=lambda: None, log=tmp_path / "log")
    server.launch()
    assert server.poll({}) is None
    os.kill(child.pid, signal.SIGKILL)
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.01)
    assert server.poll({}).describe() == "was killed by SIGKILL (exit code -9)"


def test_a_server_whose_threads_are_still_dying_is_not_reported_gone(tmp_path):
    """A killed multi-threaded server (Redis) shows its main thread as a zombie before its other
    threads have ended, and cannot be waited for until they have: the supervisor waits for its exit
    status instead of reporting it gone with the status unknown (a fresh clone's kill test did)."""
    import psutil

    from winni_site.supervisor import EmbeddedServer

    # The main thread ends first; another thread lives on for 2 s, then the process exits 0.
    script = ("import ctypes, threading, time\n"
              "threading.Thread(target=time.sleep, args=(2,)).start()\n"
              "ctypes.CDLL(None).pthread_exit(None)\n")
    child = subprocess.Popen([sys.executable, "-c", script])
    server = EmbeddedServer("redis", start=lambda: None, find_pid=lambda: child.pid,
                            alive=lambda pid: psutil.Process(pid).status() != psutil.STATUS_ZOMBIE,
                            stop=lambda: None, log=tmp_path / "log")
    server.launch()
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.01)
    assert server.poll({}) is None  # dying, not gone
    deadline = time.time() + 10
    while (exit_status := server.poll({})) is None:
        assert time.time() < deadline
        time.sleep(0.05)
    assert exit_status.describe() == "exited with code 0"


def test_a_stop_asks_the_main_process_and_lets_its_children_finish(tmp_path):
    """Stopping a part signals its main process only: Celery's warm shutdown waits for the task its
    pool child is running (a checkpoint of the session that just ended), where a SIGTERM to the
    whole group killed the child mid-task."""
    from winni_site.supervisor import ChildProcess

    done = tmp_path / "done"
    script = (
        "import signal, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import sys, time; time.sleep(1); open(sys.argv[1], \"w\")',"
        f" {str(done)!r}])\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(child.wait()))\n"
        "print('ready', flush=True)\n"
        "signal.pause()\n"
    )
    unit = ChildProcess("pool", [sys.executable, "-c", script], env=dict(os.environ))
    unit.launch()
    assert unit.process is not None and unit.process.stdout is not None
    deadline = time.monotonic() + 10
    output = b""
    while b"ready" not in output and time.monotonic() < deadline:
        output += unit.process.stdout.read() or b""
        time.sleep(0.05)
    unit.terminate()
    assert unit.process.wait(timeout=10) == 0  # the child was not signalled: it finished its work
    assert done.exists()
