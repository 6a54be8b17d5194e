"""`./winni service install|uninstall|status` (issue #27 item 2) in a temporary HOME: the systemd
unit and the launchd plist it writes (validated), idempotence, and the refusals that leave
nothing behind. No systemd user manager runs here (nor on most CI machines): install must say that
it wrote the unit but could not enable it, and how to."""
from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT
from winni_site import service


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME, XDG_CONFIG_HOME, settings file and data dir of our own; no service manager to talk to."""
    home = tmp_path / "home"
    home.mkdir()
    settings_file = tmp_path / "winni.env"
    settings_file.write_text(f"WINNI_DATA_DIR={tmp_path / 'data'}\nWINNI_PORT=9555\n")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "WINNI_ENV_FILE": str(settings_file),
           "XDG_RUNTIME_DIR": str(runtime)}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    for key in [key for key in os.environ if key.startswith("WINNI_") and key not in env]:
        monkeypatch.delenv(key)  # the test run's own settings are not the service's
    return home


def _service(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "winni_site.service", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=os.environ)


def test_the_generated_unit_passes_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed on this machine (apt install systemd): the unit is not verified")
    unit = service.render_systemd({"checkout": str(ROOT), "env_file": str(tmp_path / "my settings.env")})
    assert service.verify_systemd(unit, "winni.service") is None
    # The check does catch a broken unit (a command that is not there, a misspelt key).
    assert "is not executable" in service.verify_systemd(unit.replace(f"{ROOT}/winni", "/nowhere/winni"), "winni.service")
    assert "Unknown key" in service.verify_systemd(unit.replace("WantedBy=", "WantedBi="), "winni.service")


def test_install_and_uninstall_are_idempotent_and_say_how_to_enable(home):
    unit = home / ".config" / "systemd" / "user" / "winni.service"
    first = _service("install")
    assert first.returncode == 1, first.stderr  # written, not enabled: no systemd user manager here
    assert f"wrote systemd user unit {unit}" in first.stdout
    assert "could not be enabled: `systemctl --user daemon-reload` failed" in first.stdout
    assert "systemctl --user daemon-reload && systemctl --user enable --now winni.service" in first.stdout
    assert "loginctl enable-linger" in first.stdout
    text = unit.read_text()
    assert f"ExecStart={ROOT}/winni run" in text and f"WorkingDirectory={ROOT}" in text
    assert f"Environment=WINNI_ENV_FILE={os.environ['WINNI_ENV_FILE']}" in text
    assert "Restart=on-failure" in text and "WantedBy=default.target" in text and "RestartPreventExitStatus=78" in text
    assert not list(unit.parent.glob(".*tmp*"))  # written through a temporary file, renamed
    written_at = unit.stat().st_mtime_ns

    second = _service("install")
    assert "is already installed and up to date" in second.stdout
    assert unit.read_text() == text and unit.stat().st_mtime_ns == written_at

    status = _service("status")
    assert status.returncode == 3  # not running
    assert f"systemd user unit: {unit}" in status.stdout and "systemd: not reachable" in status.stdout
    assert "winni run: not running" in status.stdout

    removed = _service("uninstall")
    assert removed.returncode == 0 and f"removed {unit}" in removed.stdout and not unit.exists()
    again = _service("uninstall")
    assert again.returncode == 0 and "not installed" in again.stdout and "nothing to do" in again.stdout


def test_a_bad_setting_installs_nothing(home):
    Path(os.environ["WINNI_ENV_FILE"]).write_text("WINNI_PORT=abc\n")
    result = _service("install")
    assert result.returncode == 78
    assert "the settings would stop Winni at start: WINNI_PORT must be an integer, got 'abc' " \
           f"(set in {os.environ['WINNI_ENV_FILE']}, line 1); nothing was installed" in result.stderr
    assert not (home / ".config" / "systemd").exists()


def test_a_unit_of_another_checkout_is_not_overwritten(home):
    unit = home / ".config" / "systemd" / "user" / "winni.service"
    unit.parent.mkdir(parents=True)
    other = service.render_systemd({"checkout": "/srv/other-winni", "env_file": ""})
    unit.write_text(other)
    result = _service("install")
    assert result.returncode == 1
    assert "runs another checkout (/srv/other-winni)" in result.stderr and "--name winni-2" in result.stderr
    assert unit.read_text() == other
    assert _service("install", "--name", "winni-2").stdout.count("wrote systemd user unit") == 1
    assert (unit.parent / "winni-2.service").exists()


def test_unknown_actions_and_platforms_are_refused_with_nothing_written(home, capsys):
    result = _service("restart")
    assert result.returncode == 2 and "invalid choice: 'restart'" in result.stderr
    assert service.main(["install"], platform="win32") == 2
    assert "unsupported platform 'win32'" in capsys.readouterr().err
    assert list(home.iterdir()) == []


def test_the_launchd_agent_on_macos(home, capsys):
    plist_path = home / "Library" / "LaunchAgents" / "dev.winni.winni.plist"
    assert service.main(["install"], platform="darwin") == 1  # written; no launchctl here to load it
    out = capsys.readouterr().out
    assert f"wrote launchd agent {plist_path}" in out and "launchctl bootstrap gui/" in out
    plist = plistlib.loads(plist_path.read_bytes())
    assert plist["ProgramArguments"] == [f"{ROOT}/winni", "run"] and plist["WorkingDirectory"] == str(ROOT)
    assert plist["RunAtLoad"] is True and plist["KeepAlive"] == {"SuccessfulExit": False}
    assert plist["EnvironmentVariables"]["WINNI_ENV_FILE"] == os.environ["WINNI_ENV_FILE"]
    assert service.main(["install"], platform="darwin") == 1
    assert "already installed and up to date" in capsys.readouterr().out
    assert service.main(["uninstall"], platform="darwin") == 0 and not plist_path.exists()
