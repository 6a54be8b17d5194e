"""The JSON log file that every Winni process shares (issue #27 item 5, issue #24 item 10): it
rotates by size without losing or splitting a line while several processes write, keeps the
configured number of backups, and the console shows warnings only."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from tests.support import ROOT
from winni_site.logfile import ProcessJsonFormatter, SharedRotatingFileHandler, log_files

WRITERS = 4
LINES = 1500


def _write_lines(path: str, writer: int, max_bytes: int, backups: int) -> None:
    handler = SharedRotatingFileHandler(path, max_bytes=max_bytes, backups=backups)
    handler.setFormatter(ProcessJsonFormatter())
    log = logging.Logger(f"writer{writer}")
    log.addHandler(handler)
    for n in range(LINES):
        log.warning("line", extra={"fields": {"writer": writer, "n": n, "pad": "x" * (n % 97)}})
    handler.close()


def _fork_writers(path: str, max_bytes: int, backups: int) -> None:
    pids = []
    for writer in range(WRITERS):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child exits
            try:
                _write_lines(path, writer, max_bytes, backups)
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0


def test_several_processes_rotate_one_file_without_losing_or_splitting_a_line(tmp_path):
    path = tmp_path / "winni.log"
    _fork_writers(str(path), max_bytes=20_000, backups=1000)  # room for every line
    files = log_files(path)
    assert len(files) > 20  # it did rotate, many times, under four writers
    seen = set()
    for file in files:
        assert file.stat().st_size <= 20_000
        for line in file.read_text().splitlines():
            record = json.loads(line)  # every line whole
            seen.add((record["writer"], record["n"]))
    assert seen == {(writer, n) for writer in range(WRITERS) for n in range(LINES)}
    # Each writer's lines are in order across the files (oldest file first).
    order = [json.loads(line)["n"] for file in reversed(files) for line in file.read_text().splitlines()
             if json.loads(line)["writer"] == 0]
    assert order == list(range(LINES))


def test_only_the_configured_backups_are_kept(tmp_path):
    path = tmp_path / "winni.log"
    _fork_writers(str(path), max_bytes=5_000, backups=2)
    assert [file.name for file in log_files(path)] == ["winni.log", "winni.log.1", "winni.log.2"]
    assert not (tmp_path / "winni.log.3").exists()
    assert all(file.stat().st_size <= 5_000 for file in log_files(path))


def test_settings_send_every_line_to_the_file_and_warnings_to_the_console(tmp_path, live_server_env):
    log_file = tmp_path / "logs" / "w.log"
    code = ("import logging, django; django.setup(); log = logging.getLogger('winni.storage'); "
            "[log.info('conversation.create', extra={'fields': {'op': 'conversation.create', 'n': n}}) for n in range(400)]; "
            "log.warning('disk nearly full')")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={**live_server_env, "WINNI_LOG_FILE": str(log_file), "WINNI_LOG_MAX_BYTES": "8192",
                                 "WINNI_LOG_BACKUPS": "3", "WINNI_LOG_LEVEL": "INFO"})
    assert result.returncode == 0, result.stderr
    console = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert [record["msg"] for record in console] == ["disk nearly full"]
    in_file = [json.loads(line) for file in log_files(log_file) for line in file.read_text().splitlines()]
    assert "disk nearly full" in {record["msg"] for record in in_file}
    assert {record["process"] for record in in_file} == {"manage"}
    assert len(log_files(log_file)) == 4 and all(file.stat().st_size <= 8192 for file in log_files(log_file))


@pytest.mark.django_db(transaction=True)
def test_a_transcript_import_shows_its_progress_bar_without_log_lines(tmp_path, live_server_env):
    log_file = tmp_path / "winni.log"
    sample = ROOT / "tests" / "data" / "claude-code-2.1.197-session.jsonl"
    result = subprocess.run([sys.executable, "manage.py", "import_claude_transcripts", str(sample)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120,
                            env={**live_server_env, "WINNI_LOG_FILE": str(log_file), "WINNI_LOG_LEVEL": "INFO"})
    assert result.returncode == 0, result.stderr
    assert "transcripts: 100%" in result.stderr and "8 message(s) added" in result.stdout
    assert '{"ts"' not in result.stdout + result.stderr
    operations = [json.loads(line).get("op") for line in log_file.read_text().splitlines()]
    assert operations.count("message.store") == 8, operations  # the import's storage operations are in the file

