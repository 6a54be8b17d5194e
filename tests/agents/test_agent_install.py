"""`install_agent_hooks --agent claude|codex|gemini|copilot`: merges Winni's hooks and MCP server
into each agent's own files, keeps the user's settings, is idempotent, prints what it changed, and
`--uninstall` removes exactly what it added. Bad input changes nothing."""
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from agents import install as agent_install
from agents.install import HOOK_SCRIPT

TOKEN = "winni_testtoken"
URL = "http://127.0.0.1:9999"

USER_FILES = {
    "claude": {".claude/settings.json": json.dumps({"theme": "dark", "hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": "echo mine"}]}]}})},
    "codex": {
        ".codex/hooks.json": json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}}),
        ".codex/config.toml": '# my codex config\nmodel = "gpt-5.5"\n\n[mcp_servers.docs]\nurl = "https://docs.example/mcp"\n',
    },
    "gemini": {".gemini/settings.json": json.dumps({"theme": "GitHub", "mcpServers": {"other": {"command": "x"}},
                                                    "hooks": {"AfterAgent": [{"hooks": [{"type": "command",
                                                                                         "command": "echo mine"}]}]}})},
    "copilot": {".copilot/mcp-config.json": json.dumps({"mcpServers": {"other": {"type": "http", "url": "https://o"}}})},
}


def install(agent, *extra):
    call_command("install_agent_hooks", "--agent", agent, "--url", URL + "/", "--token", TOKEN, *extra)


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    return home


@pytest.mark.django_db
@pytest.mark.parametrize("agent", ["claude", "codex", "gemini", "copilot"])
def test_install_keeps_the_users_settings_is_idempotent_and_uninstalls_exactly(agent, home, capsys):
    for name, text in USER_FILES[agent].items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    original = snapshot(home)
    install(agent, "--user")
    first = capsys.readouterr().out
    assert "updated" in first or "created" in first
    installed = snapshot(home)
    install(agent, "--user")
    again = capsys.readouterr().out
    assert snapshot(home) == installed
    assert "updated" not in again and "created" not in again and "already as wanted" in again
    config = json.loads((home / ".config/winni/claude-hook.json").read_text())
    assert config == {"url": URL, "token": TOKEN, "timeout": 2}
    assert (home / ".config/winni/claude-hook.json").stat().st_mode & 0o777 == 0o600

    call_command("install_agent_hooks", "--agent", agent, "--user", "--uninstall")
    removed = capsys.readouterr().out
    assert "removed" in removed
    after = snapshot(home)
    after.pop(".config/winni/claude-hook.json")
    # JSON files hold the same data as before; TOML files the same text, comments included.
    assert set(after) == set(original)
    for name, text in original.items():
        assert (json.loads(after[name]) == json.loads(text)) if name.endswith(".json") else after[name] == text


@pytest.mark.django_db
def test_codex_files_hold_the_hooks_their_trust_and_the_mcp_server(home):
    install("codex", "--user")
    hooks = json.loads((home / ".codex/hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact"}
    command = hooks["Stop"][0]["hooks"][0]["command"]
    assert str(HOOK_SCRIPT) in command and "--agent codex" in command
    import tomlkit

    config = tomlkit.parse((home / ".codex/config.toml").read_text())
    assert config["features"]["hooks"] is True
    assert config["mcp_servers"]["winni"]["url"] == f"{URL}/mcp"
    assert config["mcp_servers"]["winni"]["http_headers"]["Authorization"] == f"Bearer {TOKEN}"
    state = config["hooks"]["state"]
    key = f"{home}/.codex/hooks.json:stop:0:0"
    assert state[key]["trusted_hash"] == agent_install.codex_trust_hash("Stop", hooks["Stop"][0])
    assert len(state) == 5
    assert (home / ".codex/config.toml").stat().st_mode & 0o777 == 0o600


def test_the_codex_trust_hash_is_the_one_codex_computes():
    """Values from Codex CLI 0.169.0's app-server (`hooks/list` currentHash) for these hooks."""
    command = "python3 /x/claude_hook.py --agent codex"
    start = {"matcher": "startup|resume", "hooks": [{"type": "command", "command": command, "timeout": 10}]}
    stop = {"hooks": [{"type": "command", "command": command, "timeout": 10}]}
    assert agent_install.codex_trust_hash("SessionStart", start) == \
        "sha256:c5196ccd893d0fda85ed79243553a00b56eba00c68797dcd979c2c0fa868ecf8"
    assert agent_install.codex_trust_hash("Stop", stop) == \
        "sha256:47ae988edcc8f51027f39a43092b2d9519ad3d8b44f4b66f53846e8d2975d8f4"


@pytest.mark.django_db
def test_project_installs_write_into_the_project(home, tmp_path, capsys):
    project = tmp_path / "proj"
    project.mkdir()
    for agent in ("claude", "codex", "gemini", "copilot"):
        install(agent, "--project", str(project))
        assert "hold the token: keep them out of version control" in capsys.readouterr().out
    assert "SessionStart" in json.loads((project / ".claude/settings.json").read_text())["hooks"]
    assert "Stop" in json.loads((project / ".codex/hooks.json").read_text())["hooks"]
    assert "winni" in (project / ".codex/config.toml").read_text()
    # Codex keeps the trust of a project's hooks in the user's config.
    assert f"{project}/.codex/hooks.json:stop:0:0" in (home / ".codex/config.toml").read_text()
    gemini = json.loads((project / ".gemini/settings.json").read_text())
    assert gemini["mcpServers"]["winni"]["httpUrl"] == f"{URL}/mcp" and "BeforeAgent" in gemini["hooks"]
    # Claude Code and Copilot CLI share the project's .mcp.json: one entry serves both.
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["winni"]["type"] == "http"
    copilot = json.loads((project / ".github/hooks/winni.json").read_text())
    assert copilot["version"] == 1
    assert copilot["hooks"]["Stop"][0]["bash"].endswith("--agent copilot --event Stop")
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["winni"]["url"] == f"{URL}/mcp"
    for agent in ("claude", "codex", "gemini", "copilot"):
        call_command("install_agent_hooks", "--agent", agent, "--project", str(project), "--uninstall")
    leftovers = {k: v for k, v in snapshot(project).items()}
    assert all(not json.loads(v) for k, v in leftovers.items() if k.endswith(".json")), leftovers
    assert not (project / ".github/hooks/winni.json").exists() and not (project / ".mcp.json").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("agent", "name", "text", "where"), [
    ("codex", ".codex/config.toml", 'model = "x"\n[features\nhooks = true\n', "line 2"),
    ("codex", ".codex/hooks.json", '{"hooks": {}\n,}', "line 2"),
    ("gemini", ".gemini/settings.json", '{\n  "theme": "x",\n}', "line 3"),
    ("copilot", ".copilot/mcp-config.json", "[1, 2]", "JSON object"),
    ("claude", ".claude/settings.json", '{"hooks": []}', "not a JSON object"),
])
def test_an_invalid_config_is_refused_by_name_and_line_and_nothing_changes(agent, name, text, where, home):
    (home / name).parent.mkdir(parents=True, exist_ok=True)
    (home / name).write_text(text)
    before = snapshot(home)
    with pytest.raises(CommandError) as error:
        install(agent, "--user")
    assert str(home / name) in str(error.value) and where in str(error.value)
    assert "nothing was changed" in str(error.value)
    assert snapshot(home) == before


@pytest.mark.django_db
def test_bad_arguments_are_clear_errors(home, tmp_path):
    with pytest.raises(CommandError, match="invalid choice: 'cursor'"):
        call_command("install_agent_hooks", "--agent", "cursor", "--user")
    with pytest.raises(CommandError, match="is not a directory"):
        install("codex", "--project", str(tmp_path / "missing"))
    assert not any(home.iterdir())


@pytest.mark.django_db
def test_a_token_is_created_once_and_reused(home, capsys):
    call_command("install_agent_hooks", "--agent", "gemini", "--user", "--url", URL)
    secret = json.loads((home / ".config/winni/claude-hook.json").read_text())["token"]
    assert secret.startswith("winni_")
    settings = json.loads((home / ".gemini/settings.json").read_text())
    assert settings["mcpServers"]["winni"]["headers"]["Authorization"] == f"Bearer {secret}"
    from winni_site.models import ApiToken

    assert ApiToken.objects.filter(name="gemini-cli").count() == 1
    call_command("install_agent_hooks", "--agent", "codex", "--user", "--url", URL)
    assert f"Bearer {secret}" in (home / ".codex/config.toml").read_text()
    assert ApiToken.objects.count() == 1


@pytest.mark.django_db
def test_dry_run_writes_nothing(home, capsys):
    call_command("install_agent_hooks", "--agent", "codex", "--user", "--dry-run", "--token", TOKEN)
    out = capsys.readouterr().out
    assert f"--- {home}/.codex/hooks.json" in out and "trusted_hash" in out
    assert not any(home.iterdir())


@pytest.mark.django_db
def test_the_agents_home_variables_are_honoured(home, tmp_path, monkeypatch):
    for variable, agent in (("CODEX_HOME", "codex"), ("COPILOT_HOME", "copilot"), ("GEMINI_CLI_HOME", "gemini")):
        monkeypatch.setenv(variable, str(tmp_path / variable))
        install(agent, "--user")
    assert (tmp_path / "CODEX_HOME" / "hooks.json").exists() and (tmp_path / "CODEX_HOME" / "config.toml").exists()
    assert (tmp_path / "COPILOT_HOME" / "hooks" / "winni.json").exists()
    assert (tmp_path / "GEMINI_CLI_HOME" / ".gemini" / "settings.json").exists()
    assert sorted(p.name for p in home.iterdir()) == [".config"]


@pytest.mark.django_db
def test_codex_hooks_turned_off_by_the_user_stay_off_and_the_installer_says_so(home, capsys):
    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text("[features]\nhooks = false\n")
    install("codex", "--user")
    assert "hooks = false" in (home / ".codex/config.toml").read_text()
    assert "Codex runs no hook" in capsys.readouterr().out
    call_command("install_agent_hooks", "--agent", "codex", "--user", "--uninstall")
    assert (home / ".codex/config.toml").read_text() == "[features]\nhooks = false\n"


# --- one token on the README's path (issue #47.4) -------------------------------------------------


def _claude_mcp_add(home: Path, secret: str, *, folder: str | None = None) -> None:
    """What `claude mcp add --transport http [--scope user] winni URL/mcp --header ...` writes in
    ~/.claude.json: the user's servers at the top, a folder's (local scope, the default) under
    "projects"."""
    entry = {"type": "http", "url": URL + "/mcp", "headers": {"Authorization": f"Bearer {secret}"}}
    servers = {"mcpServers": {"winni": entry}}
    data = {"numStartups": 3, **({"projects": {folder: servers}} if folder else servers)}
    (home / ".claude.json").write_text(json.dumps(data, indent=2) + "\n")


def _install_claude_without_token() -> None:
    call_command("install_agent_hooks", "--agent", "claude", "--url", URL)


@pytest.mark.django_db
@pytest.mark.parametrize("folder", [None, "/work/app"])
def test_the_mcp_entrys_token_is_the_hooks_token_and_installing_again_changes_nothing(home, folder):
    from winni_site import auth
    from winni_site.models import ApiToken

    _, secret = auth.token_create(name="default")  # the first run's, as `claude mcp add` got it
    _claude_mcp_add(home, secret, folder=folder)
    before = (home / ".claude.json").read_text()
    _install_claude_without_token()
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["default"]
    assert json.loads((home / ".config/winni/claude-hook.json").read_text())["token"] == secret
    claude_json = json.loads((home / ".claude.json").read_text())
    if folder is None:
        assert (home / ".claude.json").read_text() == before  # the very entry install would write
    else:
        assert claude_json["mcpServers"]["winni"]["headers"] == {"Authorization": f"Bearer {secret}"}
    installed = snapshot(home)
    _install_claude_without_token()
    assert snapshot(home) == installed and ApiToken.objects.count() == 1


@pytest.mark.django_db
def test_installing_first_makes_one_token_and_again_none(home):
    from winni_site.models import ApiToken

    _install_claude_without_token()
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["claude-code"]
    installed = snapshot(home)
    secret = json.loads(installed[".config/winni/claude-hook.json"])["token"]
    assert json.loads(installed[".claude.json"])["mcpServers"]["winni"]["headers"]["Authorization"] == f"Bearer {secret}"
    _install_claude_without_token()
    assert snapshot(home) == installed and ApiToken.objects.count() == 1


@pytest.mark.django_db
def test_a_token_winni_does_not_know_is_replaced_everywhere(home):
    from winni_site.models import ApiToken

    _claude_mcp_add(home, "winni_revoked_or_from_another_server")
    _install_claude_without_token()
    (token,) = ApiToken.objects.all()
    secret = json.loads((home / ".config/winni/claude-hook.json").read_text())["token"]
    assert secret != "winni_revoked_or_from_another_server" and token.name == "claude-code"
    assert json.loads((home / ".claude.json").read_text())["mcpServers"]["winni"]["headers"] == {
        "Authorization": f"Bearer {secret}"}
