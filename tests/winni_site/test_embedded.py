"""The embedded PostgreSQL: start, re-attach from a second process, stop, restart with data intact."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import psycopg
import pytest

from tests.support import kill_postgres
from winni_site import embedded


@pytest.fixture
def data_dir():
    path = Path(tempfile.mkdtemp(prefix="winni-emb-", dir="/tmp"))
    yield path
    embedded.stop_all(path)
    shutil.rmtree(path, ignore_errors=True)


def _connect(db: dict) -> psycopg.Connection:
    return psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"], autocommit=True)


def test_start_reattach_stop_restart(data_dir):
    db = embedded.postgres_settings(data_dir)
    with _connect(db) as conn:
        conn.execute("CREATE TABLE kept (v text)")
        conn.execute("INSERT INTO kept VALUES ('still here')")
        assert conn.execute("SELECT version FROM pg_available_extension_versions WHERE name='vector'").fetchone()

    # A second process attaches to the running server and sees the same socket.
    code = (
        "import json,sys; from pathlib import Path; from winni_site import embedded; "
        f"print(json.dumps(embedded.postgres_settings(Path({str(data_dir)!r}))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert f'"HOST": "{db["HOST"]}"' in out

    embedded.stop_postgres(data_dir)
    with pytest.raises(psycopg.OperationalError):
        _connect(db).close()

    # A stale PID list (a killed process) must not block a restart.
    (embedded.pg_data_dir(data_dir) / ".handle_pids.json").write_text("[999999]")
    embedded.forget_stale_handles(data_dir)
    restarted = embedded.postgres_settings(data_dir)
    with _connect(restarted) as conn:
        assert conn.execute("SELECT v FROM kept").fetchone() == ("still here",)


def test_a_server_killed_as_we_attach_is_started_again(data_dir):
    """postgres_settings saw a live server, then it died (SIGKILL lands a moment after it is sent):
    waiting for its socket starts it again instead of waiting on a dead one."""
    db = embedded.postgres_settings(data_dir)
    kill_postgres(embedded.pg_data_dir(data_dir))
    began = time.monotonic()
    embedded._ensure_database(data_dir, db["HOST"], db["PORT"], embedded.DATABASE_NAME)
    with _connect(db) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert time.monotonic() - began < 30  # not the 60 s wait on a dead socket


def test_shared_buffers_auto_is_a_quarter_of_the_memory():
    code = "import django; django.setup(); from django.conf import settings; print(settings.WINNI_PG_SHARED_BUFFERS)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "DJANGO_SETTINGS_MODULE": "winni_site.settings.test",
                              "WINNI_PG_SHARED_BUFFERS": "auto"}).stdout.split()
    quarter = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4 // 2**20
    assert out[-1] == f"{max(128, quarter)}MB"


def test_a_zombie_postmaster_does_not_block_a_restart(tmp_path):
    """A killed postmaster nobody has reaped yet looks alive to pgserver and PostgreSQL; once no
    process of the old server works in the data dir any more, its postmaster.pid is removed."""
    pgdata = tmp_path / "pg"
    pgdata.mkdir()
    zombie = os.fork()
    if zombie == 0:  # pragma: no cover - the child exits at once
        os._exit(0)
    while psutil.Process(zombie).status() != psutil.STATUS_ZOMBIE:
        time.sleep(0.01)
    lock = pgdata / "postmaster.pid"
    lock.write_text(f"{zombie}\n{pgdata}\n")
    backend_binary = tmp_path / "postgres"  # a process named like a backend, working in the data dir
    shutil.copy("/bin/sleep", backend_binary)
    backend = subprocess.Popen([str(backend_binary), "60"], cwd=pgdata)
    try:
        embedded._wait_for_dead_postmaster(pgdata, reap_seconds=0.1, give_up_seconds=0.5)
        assert lock.exists()  # an old backend still runs: not safe yet
    finally:
        backend.kill()
        backend.wait()
    embedded._wait_for_dead_postmaster(pgdata, reap_seconds=0.1, give_up_seconds=5)
    assert not lock.exists()
    os.waitpid(zombie, 0)


def test_shared_buffers_is_applied_once_and_kept(data_dir):
    db = embedded.postgres_settings(data_dir, shared_buffers="256MB")
    with _connect(db) as conn:
        assert conn.execute("SHOW shared_buffers").fetchone() == ("256MB",)
        started = conn.execute("SELECT pg_postmaster_start_time()").fetchone()
    # The same value again: no restart. A new value: applied (restart), data kept.
    embedded.postgres_settings(data_dir, shared_buffers="256MB")
    with _connect(db) as conn:
        assert conn.execute("SELECT pg_postmaster_start_time()").fetchone() == started
    embedded.postgres_settings(data_dir, shared_buffers="192MB")
    with _connect(db) as conn:
        assert conn.execute("SHOW shared_buffers").fetchone() == ("192MB",)


def test_embedded_redis_starts_once_and_stops(data_dir):
    url = embedded.redis_url(data_dir)
    assert embedded.redis_url(data_dir) == url  # found again, not started twice
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert embedded._redis_answers(port)
    embedded.stop_redis(data_dir)
    assert not embedded._redis_answers(port)
