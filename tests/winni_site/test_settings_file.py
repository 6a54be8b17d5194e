"""The settings file (winni.env / WINNI_ENV_FILE): its format, that the environment wins, and that
a typo or a bad value stops start-up naming the file, the line and the variable (issue #27)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.support import ROOT
from winni_site import envfile

# No database or Redis is started: these stand in for them (nothing connects while loading settings).
STAND_INS = {"DATABASE_URL": "postgresql://x@/y?host=/nonexistent", "REDIS_URL": "redis://127.0.0.1:1/0"}


def test_the_format_comments_export_and_quotes(tmp_path):
    path = tmp_path / "winni.env"
    text = """
# a comment line
WINNI_PORT=9333
export WINNI_HOST = 0.0.0.0   # a comment after an unquoted value
WINNI_EMBEDDING_API_KEY='se#cret $HOME \\n'
WINNI_MEDALLION_LLM_MODEL="a \\"quoted\\" name # not a comment"
WINNI_EMBEDDING_URL=
HF_HOME=/somewhere/else
"""
    values = {entry.key: (entry.value, entry.line) for entry in envfile.parse(text, path)}
    assert values == {
        "WINNI_PORT": ("9333", 3),
        "WINNI_HOST": ("0.0.0.0", 4),
        "WINNI_EMBEDDING_API_KEY": ("se#cret $HOME \\n", 5),  # single quotes: as written
        "WINNI_MEDALLION_LLM_MODEL": ('a "quoted" name # not a comment', 6),
        "WINNI_EMBEDDING_URL": ("", 7),
        "HF_HOME": ("/somewhere/else", 8),
    }


@pytest.mark.parametrize("text, message", [
    ("WINNI_PORT=1\njust words\n", "line 2: expected KEY=VALUE, got 'just words'"),
    ("1WINNI=2\n", "line 1: expected KEY=VALUE"),
    ("WINNI_PORT=1\n\nWINNI_PORT=2\n", "line 3: WINNI_PORT is already set on line 1"),
    ("WINNI_HOST='open\n", "line 1: the value has no closing '"),
    ('WINNI_HOST="a" b\n', "line 1: unexpected text after the quoted value: 'b'"),
])
def test_malformed_files_name_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "winni.env"
    path.write_text(text)
    with pytest.raises(ImproperlyConfigured) as caught:
        envfile.read(path)
    assert str(caught.value).startswith(f"{path}, ") and message in str(caught.value)


def test_unknown_winni_keys_are_typos_and_refused(tmp_path):
    path = tmp_path / "winni.env"
    path.write_text("WINNI_PORT=9333\nWINNI_PROT=9334\nLIBRARIAN_CACHE_TRESHOLD=2\nWINNI_ENV_FILE=/x\nOTHER_TOOL=1\n")
    with pytest.raises(ImproperlyConfigured) as caught:
        envfile.read(path)
    message = str(caught.value)
    assert "WINNI_PROT (line 2)" in message and "LIBRARIAN_CACHE_TRESHOLD (line 3)" in message
    assert "WINNI_ENV_FILE (line 4: it names the settings file itself)" in message
    assert "WINNI_PORT (" not in message and "OTHER_TOOL" not in message  # known, and not Winni's


def test_the_default_file_beside_the_script_unless_one_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("WINNI_ENV_FILE")
    monkeypatch.setattr(envfile, "DEFAULT_FILE", tmp_path / "winni.env")
    assert envfile.settings_file() is None  # none there: fine
    (tmp_path / "winni.env").write_text("")
    assert envfile.settings_file() == tmp_path / "winni.env"
    monkeypatch.setenv("WINNI_ENV_FILE", str(tmp_path / "missing.env"))
    with pytest.raises(ImproperlyConfigured, match="WINNI_ENV_FILE names .*missing.env, which does not exist"):
        envfile.settings_file()


def _settings(env_file: Path, **env: str) -> subprocess.CompletedProcess:
    """Load the dev settings in a fresh process, as start-up does, and print some of them."""
    code = ("import json, django; django.setup(); from django.conf import settings as s; "
            "print(json.dumps({k: str(getattr(s, k)) for k in ('WINNI_PORT', 'WINNI_LOG_BACKUPS', 'WINNI_HOST', "
            "'DATA_DIR', 'WINNI_SETTINGS_FILE')}))")
    full = {**os.environ, **STAND_INS, "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev", "WINNI_ENV_FILE": str(env_file),
            **env}
    for key in ("WINNI_PORT", "WINNI_LOG_BACKUPS", "WINNI_HOST", "WINNI_DATA_DIR"):
        if key not in env:
            full.pop(key, None)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True, timeout=120)


def test_the_file_sets_what_the_environment_does_not(tmp_path):
    env_file = tmp_path / "winni.env"
    env_file.write_text(f"WINNI_PORT=9333\nWINNI_LOG_BACKUPS=2\nWINNI_DATA_DIR={tmp_path / 'data'}\n")
    result = _settings(env_file, WINNI_LOG_BACKUPS="7")
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert loaded["WINNI_PORT"] == "9333"  # from the file
    assert loaded["WINNI_LOG_BACKUPS"] == "7"  # the environment wins
    assert loaded["WINNI_HOST"] == "127.0.0.1"  # neither: the default
    assert loaded["DATA_DIR"] == str(tmp_path / "data")
    assert loaded["WINNI_SETTINGS_FILE"] == str(env_file)


def test_a_bad_value_in_the_file_stops_start_up_naming_file_line_and_variable(tmp_path):
    env_file = tmp_path / "winni.env"
    env_file.write_text(f"WINNI_DATA_DIR={tmp_path}\n# the port\nWINNI_PORT=abc\n")
    env = {key: value for key, value in os.environ.items() if key not in ("WINNI_PORT", "WINNI_DATA_DIR")}
    result = subprocess.run([sys.executable, "manage.py", "winni_run"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, env={**env, **STAND_INS, "WINNI_ENV_FILE": str(env_file),
                                              "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev"})
    assert result.returncode == 78
    assert result.stderr.strip() == f"winni: WINNI_PORT must be an integer, got 'abc' (set in {env_file}, line 3)"


def test_a_typo_in_the_file_stops_start_up(tmp_path):
    env_file = tmp_path / "winni.env"
    env_file.write_text("WINNI_LOG_BACKUP=3\n")
    result = subprocess.run([sys.executable, "manage.py", "winni_run"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, env={**os.environ, **STAND_INS, "WINNI_ENV_FILE": str(env_file),
                                              "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev"})
    assert result.returncode == 78
    assert f"winni: {env_file}: unknown setting(s) WINNI_LOG_BACKUP (line 1)" in result.stderr
    assert "Traceback" not in result.stderr
