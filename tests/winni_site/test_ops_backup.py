"""Backups and restores against the real test PostgreSQL: pg_dump/pg_restore, manifests and
checksums, the restore swap (into a scratch database, never the test database), retention, the
version check, and the automatic backup before `migrate` (in a child process)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from conversations import services as conv
from conversations.models import Message
from core.errors import Conflict, InvalidInput
from tests.support import ROOT, child_env
from winni_site import backups, pgtools
from winni_site.pgtools import OperationFailed

pytestmark = pytest.mark.django_db(transaction=True)


def _conversation(n_messages: int, session: str) -> str:
    conversation = conv.conversation_begin(session_id=session)
    for i in range(n_messages):
        conv.message_store(conversation_id=conversation.id, role="user", content=f"{session} message {i} ünïcode")
    return str(conversation.id)


@pytest.fixture
def scratch():
    """A database on the test server that restores may replace; dropped afterwards with anything
    a restore left beside it."""
    database = {**connection.settings_dict, "NAME": "ops_scratch"}
    yield database
    with pgtools.connect(database, dbname="postgres") as admin:
        names = [row[0] for row in admin.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'ops_scratch%'").fetchall()]
        for name in names:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _databases_like(database: dict, pattern: str) -> list[str]:
    with pgtools.connect(database, dbname="postgres") as admin:
        return [r[0] for r in admin.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", (pattern,))]


def _contents(database: dict) -> list[tuple]:
    with pgtools.connect(database) as conn:
        return conn.execute(
            "SELECT c.session_id, m.turn_number, m.content FROM conversations_message m "
            "JOIN conversations_conversation c ON c.id = m.conversation_id ORDER BY 1, 2"
        ).fetchall()


def test_backup_has_a_manifest_that_matches_the_dump_and_the_data(tmp_path):
    _conversation(3, "alpha")
    backup = backups.backup_create(out=tmp_path)

    manifest = json.loads(backup.manifest_path.read_text())
    assert manifest["format"] == "winni-backup" and manifest["version"] == 1
    assert manifest["row_counts"]["conversations_message"] == 3
    assert manifest["row_counts"]["conversations_conversation"] == 1
    assert manifest["sha256"] == backups.file_sha256(backup.path)
    assert manifest["size_bytes"] == backup.path.stat().st_size
    from django.db.migrations.recorder import MigrationRecorder

    applied = MigrationRecorder(connection).migration_qs.filter(app="conversations").order_by("name").last()
    assert manifest["schema_version"]["conversations"] == applied.name
    assert manifest["server_version"].startswith("18")
    # Written atomically: nothing but the two finished files is left in the folder.
    assert sorted(p.name for p in tmp_path.iterdir()) == [backup.path.name, backup.manifest_path.name]


def test_restore_into_an_empty_database_then_refuse_then_force(tmp_path, scratch):
    _conversation(2, "first")
    first = backups.backup_create(out=tmp_path / "first.dump")
    manifest = backups.backup_restore(path=first.path, database=scratch)
    assert manifest["sha256"] == first.manifest["sha256"]
    assert _contents(scratch) == _contents(connection.settings_dict)

    _conversation(1, "second")
    second = backups.backup_create(out=tmp_path / "second.dump")
    with pytest.raises(Conflict, match="already holds data.*--force"):
        backups.backup_restore(path=second.path, database=scratch)
    assert [row[0] for row in _contents(scratch)] == ["first", "first"]

    held = pgtools.connect(scratch)  # a web process still connected: its session is closed
    backups.backup_restore(path=second.path, database=scratch, force=True)
    with pytest.raises(psycopg.OperationalError):
        held.execute("SELECT 1")
    held.close()
    assert [row[0] for row in _contents(scratch)] == ["first", "first", "second"]
    # The replaced database is gone, and no half-restored copy was left behind.
    assert _databases_like(scratch, "ops_scratch_%") == []

    backups.backup_restore(path=first.path, database=scratch, force=True, keep_old=True)
    kept = _databases_like(scratch, "ops_scratch_before_restore_%")
    assert len(kept) == 1
    assert [row[0] for row in _contents({**scratch, "NAME": kept[0]})] == ["first", "first", "second"]


def test_a_corrupt_backup_is_refused_before_anything_changes(tmp_path, scratch):
    _conversation(2, "kept")
    good = backups.backup_create(out=tmp_path / "good.dump")
    backups.backup_restore(path=good.path, database=scratch)

    flipped = tmp_path / "flipped.dump"
    shutil.copy(good.path, flipped)
    shutil.copy(good.manifest_path, backups.manifest_path(flipped))
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    with pytest.raises(InvalidInput, match="checksum mismatch"):
        backups.backup_restore(path=flipped, database=scratch, force=True)

    # A dump that matches its manifest but cannot be restored (truncated): pg_restore fails in
    # the new database; the old one keeps its data.
    truncated = tmp_path / "truncated.dump"
    truncated.write_bytes(good.path.read_bytes()[: good.manifest["size_bytes"] // 2])
    manifest = {**good.manifest, "sha256": backups.file_sha256(truncated)}
    backups.manifest_path(truncated).write_text(json.dumps(manifest))
    with pytest.raises(OperationFailed, match="pg_restore failed"):
        backups.backup_restore(path=truncated, database=scratch, force=True)

    assert [row[0] for row in _contents(scratch)] == ["kept", "kept"]
    assert _databases_like(scratch, "ops_scratch_%") == []

    with pytest.raises(InvalidInput, match="no manifest"):
        backups.manifest_path(truncated).unlink()
        backups.backup_restore(path=truncated, database=scratch, force=True)


def test_only_the_newest_backups_are_kept(tmp_path, settings):
    settings.WINNI_BACKUP_DIR = tmp_path
    settings.WINNI_BACKUP_KEEP = 2
    made = [backups.backup_create().path for _ in range(3)]
    assert [b.path for b in backups.backup_list()] == made[1:]
    assert not made[0].exists() and not backups.manifest_path(made[0]).exists()


def test_pg_dump_older_than_the_server_is_explained(settings):
    """The machine's PATH pg_dump is PostgreSQL 15; the server is 18."""
    old = Path("/usr/lib/postgresql/15/bin")
    if not (old / "pg_dump").exists():
        pytest.skip("no PostgreSQL 15 client programs on this machine")
    settings.WINNI_PG_BIN_DIR = str(old)
    with pytest.raises(OperationFailed, match=r"is PostgreSQL 15, but the server is PostgreSQL 18"):
        backups.backup_create(out=Path("/tmp/never-written.dump"))
    assert not Path("/tmp/never-written.dump").exists()

    # Unset, with an external DATABASE_URL: the PATH pg_dump (15) is passed over for one that can
    # dump an 18 server.
    settings.WINNI_PG_BIN_DIR = ""
    settings.WINNI_EMBEDDED_POSTGRES = False
    folder = pgtools.programs_for(connection.settings_dict)
    assert pgtools.program_major(folder / "pg_dump") >= 18


def test_commands(tmp_path):
    _conversation(1, "cmd")
    out = tmp_path / "cmd.dump"
    call_command("winni_backup", out=out)
    call_command("winni_backup", verify=out)
    with pytest.raises(CommandError, match="already holds data"):
        call_command("winni_restore", str(out))
    with pytest.raises(CommandError, match="no backup at"):
        call_command("winni_restore", str(tmp_path / "missing.dump"), force=True)
    with pytest.raises(CommandError, match="out must end in .dump"):
        call_command("winni_backup", out=tmp_path / "x.txt")
    assert Message.objects.count() == 1


def _manage(env: dict, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=180)


def test_migrate_backs_up_a_database_with_data_first(tmp_path, scratch):
    with pgtools.connect(scratch, dbname="postgres") as admin:
        admin.execute('CREATE DATABASE "ops_scratch"')
    env = child_env(scratch, WINNI_BACKUP_BEFORE_MIGRATE="true", WINNI_BACKUP_DIR=str(tmp_path))

    fresh = _manage(env, "migrate")
    assert fresh.returncode == 0, fresh.stderr
    assert list(tmp_path.iterdir()) == []  # an empty database is not backed up

    with pgtools.connect(scratch) as conn:
        conn.execute("INSERT INTO winni_site_apitoken (name, secret_sha256, created_at, scope, toolsets) VALUES ('x', 'y', now(), 'write', '{}')")
    # Step back the newest migration of an app that nothing depends on, then apply it again.
    app, newest, before = _newest_leaf_migration()
    assert _manage(env, "migrate", app, before).returncode == 0
    unapplied = _manage(env, "migrate")
    assert unapplied.returncode == 0, unapplied.stderr
    assert f"backing up before applying 1 migration(s): {app}.{newest}" in unapplied.stdout
    taken = backups.backup_list(folder=tmp_path)
    assert len(taken) == 2  # one before the backwards migration, one before the forwards one
    assert taken[-1].manifest["row_counts"]["winni_site_apitoken"] == 1
    assert newest not in taken[-1].manifest["schema_version"][app]
    backups.backup_verify(path=taken[-1].path)


def _newest_leaf_migration() -> tuple[str, str, str]:
    """(app, its newest migration, the one before) for a project app whose newest migration no
    other migration depends on."""
    from django.db.migrations.loader import MigrationLoader

    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    for app in ("medallions", "contexts", "winni_site", "conversations", "memory"):
        (leaf,) = graph.leaf_nodes(app)
        parents = [parent for parent in graph.node_map[leaf].parents if parent[0] == app]
        if not graph.node_map[leaf].children and parents:
            return app, leaf[1], parents[0][1]
    raise AssertionError("every app's newest migration has dependents")


def test_nothing_to_apply_or_an_empty_database_takes_no_backup(settings, tmp_path, scratch):
    settings.WINNI_BACKUP_BEFORE_MIGRATE = True
    settings.WINNI_BACKUP_DIR = tmp_path
    _conversation(1, "data")
    assert backups.backup_before_migrate(plan=[]) is None
    with pgtools.connect(scratch, dbname="postgres") as admin:
        admin.execute('CREATE DATABASE "ops_scratch"')
    from django.db.migrations.loader import MigrationLoader

    migration = MigrationLoader(connection).get_migration("winni_site", "0002_backup_run")
    assert backups.backup_before_migrate(plan=[(migration, False)], database=scratch) is None
    assert backups.backup_before_migrate(plan=[(migration, False)]) is not None
    settings.WINNI_BACKUP_BEFORE_MIGRATE = False
    assert backups.backup_before_migrate(plan=[(migration, False)]) is None
    assert len(backups.backup_list(folder=tmp_path)) == 1
