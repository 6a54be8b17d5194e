"""The agents' side as an app of its own (agents, issue #46): a database made before the move
migrates without losing an injection or a permission (the table is renamed, not copied), and
hooks installed before the hook program moved keep working."""
from __future__ import annotations

import subprocess
import sys

import pytest
from django.db import connection

from agents import install
from tests.support import ROOT, child_env
from winni_site import pgtools


@pytest.fixture
def scratch():
    database = {**connection.settings_dict, "NAME": "agents_move_scratch"}
    with pgtools.connect(database, dbname="postgres") as admin:
        admin.execute('CREATE DATABASE "agents_move_scratch"')
    yield database
    with pgtools.connect(database, dbname="postgres") as admin:
        admin.execute('DROP DATABASE IF EXISTS "agents_move_scratch" WITH (FORCE)')


def _manage(env: dict, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_move_keeps_its_injections_and_permissions(scratch):
    env = child_env(scratch)
    # Back to the schema as it was while injections lived in winni_site (its 0006 was their last
    # step): table, rows and content types as an installation made before the move has them.
    for argv in (["migrate"], ["migrate", "winni_site", "0006"], ["migrate", "agents", "zero"]):
        result = _manage(env, *argv)
        assert result.returncode == 0, result.stderr
    with pgtools.connect(scratch) as conn:
        assert conn.execute("SELECT to_regclass('agents_injection')").fetchone() == (None,)
        # Made by the first `migrate` here, never by an installation from before the move.
        conn.execute("DELETE FROM auth_permission WHERE content_type_id IN "
                     "(SELECT id FROM django_content_type WHERE app_label = 'agents')")
        conn.execute("DELETE FROM django_content_type WHERE app_label = 'agents'")
        conn.execute(
            "INSERT INTO winni_site_injection (session_id, trigger, file_path, text, items, item_keys, gate, "
            "created_at, delivered, undelivered_reason) VALUES ('s1', 'prompt', '', 'Money is integer cents.', "
            "'[]', '{memory:1}', '{}', now(), false, 'hook timed out')")
        (permission,) = conn.execute(
            "SELECT p.id FROM auth_permission p JOIN django_content_type t ON t.id = p.content_type_id "
            "WHERE t.app_label = 'winni_site' AND t.model = 'injection' AND p.codename = 'view_injection'").fetchone()
        (group,) = conn.execute("INSERT INTO auth_group (name) VALUES ('recall readers') RETURNING id").fetchone()
        conn.execute("INSERT INTO auth_group_permissions (group_id, permission_id) VALUES (%s, %s)", (group, permission))

    after = _manage(env, "migrate")
    assert after.returncode == 0, after.stderr
    assert _manage(env, "migrate", "--check").returncode == 0  # nothing left to apply
    with pgtools.connect(scratch) as conn:
        assert conn.execute("SELECT to_regclass('winni_site_injection')").fetchone() == (None,)
        assert conn.execute("SELECT session_id, text, item_keys, delivered, undelivered_reason "
                            "FROM agents_injection").fetchall() == [
            ("s1", "Money is integer cents.", ["memory:1"], False, "hook timed out")]
        # New rows still get ids from the identity the old table had.
        conn.execute("INSERT INTO agents_injection (session_id, trigger, file_path, text, items, item_keys, gate, "
                      "created_at, delivered, undelivered_reason) VALUES ('s2', 'file', 'a.py', 'x', '[]', '{}', "
                      "'{}', now(), true, '')")
        assert [row[0] for row in conn.execute("SELECT session_id FROM agents_injection ORDER BY id")] == ["s1", "s2"]
        assert conn.execute("SELECT app_label FROM django_content_type WHERE model = 'injection'").fetchall() == [
            ("agents",)]
        assert conn.execute(
            "SELECT t.app_label, p.codename FROM auth_group_permissions g JOIN auth_permission p ON p.id = g.permission_id "
            "JOIN django_content_type t ON t.id = p.content_type_id WHERE g.group_id = %s", (group,)).fetchall() == [
            ("agents", "view_injection")]


def test_a_hook_installed_before_the_move_still_runs_and_is_recognised(tmp_path):
    """Settings files written before the hook program moved name winni_site/claude_hook.py: that
    path runs agents/hook.py, and the installer still knows the command as Winni's (to replace it)."""
    old = ROOT / "winni_site" / "claude_hook.py"
    config = tmp_path / "hook.json"
    config.write_text('{"url": "http://127.0.0.1:9", "token": "x", "timeout": 0.2}')
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "WINNI_HOOK_SPOOL": str(tmp_path / "spool.jsonl"),
           "WINNI_HOOK_LOG": str(tmp_path / "hook.log")}
    event = '{"hook_event_name": "Stop", "session_id": "s-old", "cwd": "/tmp", "last_assistant_message": "done"}'
    done = subprocess.run([sys.executable, "-I", "-S", str(old), "--config", str(config)], input=event, env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    # Nobody listens on port 9: the event waits in the spool, as agents/hook.py does it.
    assert '"s-old"' in (tmp_path / "spool.jsonl").read_text()
    command = f"python3 -I -S {old} --config {config}"
    assert install.is_winni_command(command)
    assert install.is_winni_command(install.hook_command(python="python3", config=config, agent="claude"))
    assert not install.is_winni_command("python3 ~/bin/pre_commit_hook.py")
