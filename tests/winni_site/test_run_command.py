"""`./winni run`'s command end to end: embedded services, credentials once, healthy, clean stop."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import psutil
import pytest

from tests.support import ROOT, free_port

pytestmark = [pytest.mark.live, pytest.mark.slow]


def _processes_using(data_dir: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "environ"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
            environ = proc.info["environ"] or {}
        except (psutil.Error, TypeError):
            continue
        if data_dir in cmdline or environ.get("WINNI_DATA_DIR") == data_dir:
            found.append(proc)
    return found


def _start(data_dir: str, port: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(WINNI_DATA_DIR=data_dir, WINNI_PORT=str(port), DJANGO_SETTINGS_MODULE="winni_site.settings.dev",
               WINNI_HEARTBEAT_SECONDS="2")
    return subprocess.Popen([sys.executable, "manage.py", "winni_run"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_worker_ok(port: int, timeout: float = 90) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
                report = json.load(response)
                if report["status"] == "ok":
                    return report
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError("winni_run never became healthy")


def test_run_starts_everything_and_ctrl_c_leaves_nothing_behind():
    data_dir = tempfile.mkdtemp(prefix="winni-run-", dir="/tmp")
    port = free_port()
    try:
        first = _start(data_dir, port)
        report = _wait_worker_ok(port)
        assert report["database"]["embedded"] and report["redis"]["embedded"]
        first.send_signal(signal.SIGINT)
        output = first.communicate(timeout=60)[0]
        assert first.returncode == 0, output
        assert "First run: API token 'default' = winni_" in output
        assert f"claude mcp add --scope user --transport http winni http://127.0.0.1:{port}/mcp" in output
        time.sleep(0.5)
        assert _processes_using(data_dir) == []

        second = _start(data_dir, port)
        _wait_worker_ok(port)
        second.send_signal(signal.SIGINT)
        output = second.communicate(timeout=60)[0]
        assert "First run" not in output  # credentials are printed once
        time.sleep(0.5)
        assert _processes_using(data_dir) == []
    finally:
        for proc in _processes_using(data_dir):
            proc.kill()
        shutil.rmtree(data_dir, ignore_errors=True)
