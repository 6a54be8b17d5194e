"""Upgrades in place (issue #27 item 4): after an "update" whose second migration fails, `winni run`
restores the backup taken before migrating (so the first, already applied migration is undone
too), stops with a message naming the migration, the backup and the commit to go back to, does
not try (and back up) again on the next start, and the previous version runs on the restored data."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from tests.support import ROOT, WinniRun, processes_using
from winni_site import embedded

pytestmark = [pytest.mark.live, pytest.mark.slow]

OLD = {"DJANGO_SETTINGS_MODULE": "tests.upgrade_settings", "UPGRADE_PROBE_MIGRATIONS": "tests.upgrade_probe.migrations_old"}
NEW = {**OLD, "UPGRADE_PROBE_MIGRATIONS": "tests.upgrade_probe.migrations_new"}


@pytest.fixture
def data_dir():
    path = Path(tempfile.mkdtemp(prefix="winni-upg-", dir="/tmp"))
    yield path
    embedded.stop_all(path)
    for proc in processes_using(str(path)):
        proc.kill()
    shutil.rmtree(path, ignore_errors=True)


def _start_and_stop(data_dir: Path, settings: dict[str, str]) -> str:
    run = WinniRun(data_dir, args=("--no-worker",), **settings)
    try:
        run.wait_up(worker=False)
    finally:
        assert run.stop() == 0, run.console()
    return run.console()


def _probe_state(data_dir: Path) -> tuple[set[str], list[str], set[str]]:
    """(columns of the probe table, its rows, applied probe migrations), read with PostgreSQL started here."""
    db = embedded.postgres_settings(data_dir)
    try:
        with psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"]) as conn:
            columns = {row[0] for row in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'upgrade_probe_note'")}
            rows = [row[0] for row in conn.execute("SELECT body FROM upgrade_probe_note ORDER BY id")]
            applied = {row[0] for row in conn.execute("SELECT name FROM django_migrations WHERE app = 'upgrade_probe'")}
    finally:
        embedded.stop_postgres(data_dir)
    return columns, rows, applied


def test_a_failed_upgrade_restores_the_backup_and_says_how_to_go_back(data_dir):
    _start_and_stop(data_dir, OLD)  # the old version ran here (and has data: the admin, a token, a note)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    failed = WinniRun(data_dir, **NEW)
    assert failed.process.wait(180) == 78
    console = failed.console()
    backups = sorted((data_dir / "backups").glob("winni-*.dump"))
    assert len(backups) == 1
    assert "2 new migration(s) to apply: upgrade_probe.0002_add_column, upgrade_probe.0003_broken" in console
    assert "the update's migration upgrade_probe.0003_broken failed: " in console and "division by zero" in console
    assert (f"1 of 2 new migration(s) had been applied; the database was restored from the backup taken just "
            f"before ({backups[0]})") in console
    assert f"git checkout {commit} && ./winni run" in console
    assert "Winni is up" not in console
    assert processes_using(str(data_dir)) == []

    # The restore undid 0002 too: the old schema and the old data.
    assert _probe_state(data_dir) == ({"id", "body"}, ["written by the old version"], {"0001_initial"})

    # The same update again: stops at once, without another backup (under the user service this
    # would otherwise loop, backing up each time).
    again = WinniRun(data_dir, **NEW)
    assert again.process.wait(120) == 78
    assert "This start applied nothing: these migrations failed before" in again.console()
    assert "--retry-migrations" in again.console()
    assert len(list((data_dir / "backups").glob("winni-*.dump"))) == 1

    # Going back to the previous version: it runs on the restored data.
    _start_and_stop(data_dir, OLD)
