"""A database from before projects (conversations with `metadata.project`, memories tagged
`repo:<name>`, medallions scoped `repo:<name>`, one active startup context, a cached answer)
migrates into projects without losing a row: each legacy name becomes one project (with the name
as its alias, ready to be claimed by the first capture from a git root of that folder name), the
rows belong to it, contexts and cached answers stay global. The migrations also run backwards."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.db import connection

from tests.support import ROOT, child_env
from winni_site import pgtools

pytestmark = pytest.mark.django_db(transaction=True)

SCRATCH = "projects_migration_scratch"
# The last migration of each app before projects.
BEFORE = {"conversations": "0003", "contexts": "0002", "memory": "0006", "librarian": "0001", "medallions": "0002"}


@pytest.fixture
def scratch():
    database = {**connection.settings_dict, "NAME": SCRATCH}
    with pgtools.connect(database, dbname="postgres") as admin:
        admin.execute(f'CREATE DATABASE "{SCRATCH}"')
    yield database
    with pgtools.connect(database, dbname="postgres") as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{SCRATCH}" WITH (FORCE)')


def _manage(env: dict, *argv: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def _rows_of_today(conn) -> None:  # type: ignore[no-untyped-def]
    for session, metadata in (("s1", {"source": "claude-code", "project": "winni", "cwd": "/src/winni"}),
                              ("s2", {"source": "claude-code", "project": "winni"}),
                              ("s3", {"source": "claude-code", "project": "ledgerline"}),
                              ("s4", {"source": "api"}), ("s5", None)):
        conn.execute("INSERT INTO conversations_conversation (id, session_id, metadata, created_at, updated_at) "
                     "VALUES (gen_random_uuid(), %s, %s, now(), now())",
                     (session, None if metadata is None else json.dumps(metadata)))
    for number, tags in enumerate((["repo:winni", "decision"], ["repo:other-tool"], ["plain"], [])):
        conn.execute("INSERT INTO memory_memory (id, content, content_hash, tags, created_at) "
                     "VALUES (gen_random_uuid(), %s, %s, %s, now())", (f"fact {number}", f"h{number}", tags))
    for nodes, tags in ((["module:cli"], ["repo:winni"]), (["repo:ledgerline"], []), ([], ["ops"])):
        conn.execute(
            "INSERT INTO medallions_medallion (id, schema_version, status, graph_nodes, tags, summary, decisions, "
            "open_questions, affordances, model_info, created_at, updated_at, search_text) VALUES (gen_random_uuid(), "
            "'1.0', 'active', %s, %s, '{}', '[]', '[]', '{}', '{}', now(), now(), '')", (nodes, tags))
    for name, active in (("house", True), ("old", False)):
        conn.execute("INSERT INTO contexts_startupcontext (id, name, content, is_active, created_at, updated_at) "
                     "VALUES (gen_random_uuid(), %s, 'text', %s, now(), now())", (name, active))
    conn.execute(
        "INSERT INTO memory_querymemory (query_hash, query_text, embedding_model, answer, answer_version, sources, "
        "ask_count, first_asked, last_asked, cache_hits, feedback_positive, feedback_negative, tier, pinned) "
        "VALUES ('q1', 'Which port?', '', '9020', 1, '[]', 2, now(), now(), 1, 0, 0, 'warm', false)")


@pytest.mark.slow  # migrates a scratch database back and forth
def test_a_database_from_before_projects_migrates_into_projects(scratch):
    env = child_env(scratch)
    _manage(env, "migrate")
    _manage(env, "migrate", "core", "zero")  # undoes every app's project migration first
    with pgtools.connect(scratch) as conn:
        applied = {app: max(name for (name,) in conn.execute(
            "SELECT name FROM django_migrations WHERE app = %s", (app,)).fetchall()) for app in BEFORE}
        assert {app: name[:4] for app, name in applied.items()} == BEFORE
        _rows_of_today(conn)

    _manage(env, "migrate")
    assert "[ ]" not in _manage(env, "showmigrations").stdout
    with pgtools.connect(scratch) as conn:
        made = dict(conn.execute("SELECT slug, name FROM core_project").fetchall())
        assert made == {"winni": "winni", "ledgerline": "ledgerline", "other-tool": "other-tool"}
        assert sorted(conn.execute("SELECT k.kind, k.value FROM core_projectkey k").fetchall()) == [
            ("alias", "ledgerline"), ("alias", "other-tool"), ("alias", "winni")]

        def project_of(sql: str) -> list[tuple]:
            return sorted(conn.execute(sql).fetchall(), key=repr)

        assert project_of("SELECT c.session_id, p.slug FROM conversations_conversation c "
                          "LEFT JOIN core_project p ON p.id = c.project_id") == sorted(
            [("s1", "winni"), ("s2", "winni"), ("s3", "ledgerline"), ("s4", None), ("s5", None)], key=repr)
        assert project_of("SELECT m.content, p.slug FROM memory_memory m LEFT JOIN core_project p ON p.id = m.project_id"
                          ) == sorted([("fact 0", "winni"), ("fact 1", "other-tool"), ("fact 2", None),
                                       ("fact 3", None)], key=repr)
        # Tags stay tags.
        assert conn.execute("SELECT tags FROM memory_memory WHERE content = 'fact 0'").fetchone() == (
            ["repo:winni", "decision"],)
        assert project_of("SELECT m.graph_nodes || m.tags, p.slug FROM medallions_medallion m "
                          "LEFT JOIN core_project p ON p.id = m.project_id") == sorted(
            [(["module:cli", "repo:winni"], "winni"), (["repo:ledgerline"], "ledgerline"), (["ops"], None)], key=repr)
        assert conn.execute("SELECT name, is_active, project_id FROM contexts_startupcontext ORDER BY name").fetchall() == [
            ("house", True, None), ("old", False, None)]
        assert conn.execute("SELECT query_text, project_id FROM memory_querymemory").fetchall() == [("Which port?", None)]

    # Backwards and forwards again: the same projects, no duplicates.
    _manage(env, "migrate", "core", "zero")
    _manage(env, "migrate")
    with pgtools.connect(scratch) as conn:
        assert conn.execute("SELECT count(*) FROM core_project").fetchone() == (3,)
        assert conn.execute("SELECT count(*) FROM conversations_conversation WHERE project_id IS NOT NULL"
                            ).fetchone() == (3,)
