"""The answer cache as an app of its own (memory.librarian, label "librarian"): a database made
before the move migrates without losing a row or a permission, exports written before the move
import, and queued tasks keep their names."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from django.db import connection

from tests.support import ROOT, child_env
from winni_site import pgtools, portable

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def scratch():
    database = {**connection.settings_dict, "NAME": "cache_move_scratch"}
    with pgtools.connect(database, dbname="postgres") as admin:
        admin.execute('CREATE DATABASE "cache_move_scratch"')
    yield database
    with pgtools.connect(database, dbname="postgres") as admin:
        admin.execute('DROP DATABASE IF EXISTS "cache_move_scratch" WITH (FORCE)')


def _manage(env: dict, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.slow  # migrates a scratch database back and forth
def test_a_database_from_before_the_move_keeps_its_entries_and_permissions(scratch):
    env = child_env(scratch)
    # Back to the schema as it was while the cache lived in the memory app (memory 0005 was its last
    # step): tables, rows and content types as an installation made before the move has them.
    for argv in (["migrate"], ["migrate", "memory", "0005"], ["migrate", "librarian", "zero"]):
        result = _manage(env, *argv)
        assert result.returncode == 0, result.stderr
    with pgtools.connect(scratch) as conn:
        # Made by the first `migrate` here, never by an installation from before the move.
        conn.execute("DELETE FROM auth_permission WHERE content_type_id IN "
                     "(SELECT id FROM django_content_type WHERE app_label = 'librarian')")
        conn.execute("DELETE FROM django_content_type WHERE app_label = 'librarian'")
        conn.execute(
            "INSERT INTO memory_querymemory (query_hash, query_text, embedding_model, answer, answer_version, sources, "
            "ask_count, first_asked, last_asked, cache_hits, feedback_positive, feedback_negative, tier, pinned) "
            "VALUES ('h1', 'Where do backups go?', '', 'To the data dir.', 1, '[]', 3, now(), now(), 2, 0, 0, 'warm', "
            "true)")
        (permission,) = conn.execute(
            "SELECT p.id FROM auth_permission p JOIN django_content_type t ON t.id = p.content_type_id "
            "WHERE t.app_label = 'memory' AND t.model = 'querymemory' AND p.codename = 'view_querymemory'").fetchone()
        (group,) = conn.execute("INSERT INTO auth_group (name) VALUES ('cache readers') RETURNING id").fetchone()
        conn.execute("INSERT INTO auth_group_permissions (group_id, permission_id) VALUES (%s, %s)", (group, permission))

    after = _manage(env, "migrate")
    assert after.returncode == 0, after.stderr
    assert _manage(env, "migrate", "--check").returncode == 0  # nothing left to apply
    with pgtools.connect(scratch) as conn:
        assert conn.execute("SELECT query_text, answer, pinned FROM memory_querymemory").fetchall() == [
            ("Where do backups go?", "To the data dir.", True)]
        assert conn.execute("SELECT app_label FROM django_content_type WHERE model = 'querymemory'").fetchall() == [
            ("librarian",)]
        assert conn.execute(
            "SELECT t.app_label, p.codename FROM auth_group_permissions g JOIN auth_permission p ON p.id = g.permission_id "
            "JOIN django_content_type t ON t.id = p.content_type_id WHERE g.group_id = %s", (group,)).fetchall() == [
            ("librarian", "view_querymemory")]


def test_an_export_written_before_the_move_imports(tmp_path):
    """The export format names the cache's store (cache_entries), not its app; the old manifest's
    row counts said "memory.querymemory"."""
    line = {"id": 7, "query_hash": "h7", "query_text": "Which port?", "embedding": None, "embedding_model": "",
            "answer": "9020.", "answer_version": 1, "sources": [], "ask_count": 2, "first_asked": "2026-11-01T10:00:00+00:00",
            "last_asked": "2026-11-02T10:00:00+00:00", "compute_time_ms": 12, "cache_hits": 1, "confidence": 0.5,
            "feedback_positive": 0, "feedback_negative": 0, "tier": "warm", "pinned": False, "expires_at": None}
    data = (json.dumps(line, sort_keys=True) + "\n").encode()
    (tmp_path / "cache_entries.jsonl").write_bytes(data)
    manifest = {"format": "winni-export", "version": 1, "created_at": "2026-11-20T00:00:00+00:00", "stores": {
        "cache_entries": {"file": "cache_entries.jsonl", "version": 1, "lines": 1,
                          "rows": {"memory.querymemory": 1}, "sha256": hashlib.sha256(data).hexdigest()}}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))

    report = portable.import_all(folder=tmp_path)

    from memory.librarian.models import QueryMemory

    assert report == {"cache_entries": {"librarian.querymemory": 1}}
    assert QueryMemory.objects.get(pk=7).answer == "9020."


def test_the_cache_tasks_keep_their_names():
    """Queued tasks and the beat schedule address a task by name: the names of memory/librarian_tasks.py."""
    from celery import Celery

    from memory.librarian import tasks
    from winni_site.celery import setup_periodic_tasks

    assert (tasks.librarian_embed.name, tasks.librarian_evict.name) == (
        "memory.librarian_tasks.librarian_embed", "memory.librarian_tasks.librarian_evict")
    app = Celery("schedule-test", set_as_current=False)  # the project's app stays the one tasks go to
    setup_periodic_tasks(app)
    assert "memory.librarian_tasks.librarian_evict" in {entry["task"] for entry in app.conf.beat_schedule.values()}
