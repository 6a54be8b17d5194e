"""`./winni doctor` against a live Winni (uvicorn), with every agent's hooks installed by the
installer in a scratch HOME: what each agent would receive through its installed hook, its
latency, token and MCP tool set, what is misconfigured (with the fixing command), and Winni down."""
from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from django.core.management import call_command

from agents import dialects
from agents.models import Injection
from conversations.models import Conversation
from core.models import Project
from tests.support import free_port

pytestmark = pytest.mark.live

MEMORY = "Money is integer cents: amounts are stored as integer cents, never as floats."
PROMPT = "How do we store money amounts, as integer cents or floats?"


def doctor(*args: str) -> tuple[int, str, float]:
    out = io.StringIO()
    started = time.perf_counter()
    with pytest.raises(SystemExit) as exit_:
        call_command("winni_doctor", *args, stdout=out)
    return exit_.value.code, out.getvalue(), time.perf_counter() - started


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CODEX_HOME", "GEMINI_CLI_HOME", "COPILOT_HOME", "WINNI_TOKEN", "WINNI_URL", "WINNI_HOOK_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_doctor_shows_what_each_agent_receives_and_what_is_wrong(winni_server, live_token, home, tmp_path):
    from memory import services as memory

    project = tmp_path / "shop"
    project.mkdir()
    from memory import vectors

    stored, _, _ = memory.memory_remember(content=MEMORY, tags=["decision"])
    vectors.embedding_store(kind="memory", ids=[stored.pk], build_index=False)
    for agent in dialects.AGENTS:
        call_command("install_agent_hooks", "--agent", agent, "--url", winni_server.url, "--token", live_token,
                     stdout=io.StringIO())

    status, out, seconds = doctor("--cwd", str(project), "--prompt", PROMPT)
    assert status == 0, out
    assert seconds <= 5, out  # the bound, on a running Winni
    assert f"Winni at {winni_server.url}: running" in out
    for name in ("Claude Code", "Codex CLI", "Gemini CLI", "Copilot CLI"):
        section = out.split(f"\n{name}\n", 1)[1].split("\n\n", 1)[0]
        assert "hook latency: " in section and "token: alice, scope write; projects: all, and the global rows; tool sets: every served set" in section, section
        assert f"MCP: {winni_server.url}/mcp, tool sets " in section and "tools/list " in section, section
        assert "the agent receives:\n" in section and f"] {MEMORY}" in section and "PROBLEM" not in section, section
    assert "No problems found" in out
    # What the synthetic prompt left is gone: its conversations, what recall gave them, and the
    # project its capture made for the new folder (found using Winni: an empty project was left).
    assert not Conversation.objects.filter(session_id__startswith="winni-doctor-").exists()
    assert "project: shop" in out and not Project.objects.filter(slug="shop").exists()
    assert not Injection.objects.filter(session_id__startswith="winni-doctor-").exists()
    # The spool and log the hooks ran with were the doctor's own: the user's spool holds nothing.
    assert not (home / ".cache" / "winni" / "claude-hook-spool.jsonl").exists()

    # Misconfigured: Claude Code's MCP entry with another token, Codex's hooks untrusted.
    claude_json = home / ".claude.json"
    claude_json.write_text(claude_json.read_text().replace(live_token, "winni_other"))
    codex_config = home / ".codex" / "config.toml"
    codex_config.write_text("\n".join(line for line in codex_config.read_text().splitlines()
                                      if "trusted_hash" not in line) + "\n")
    status, out, _ = doctor("--cwd", str(project), "--prompt", PROMPT)
    assert status == 1, out
    claude = out.split("\nClaude Code\n", 1)[1].split("\n\n", 1)[0]
    assert "PROBLEM: the MCP entry and the hooks use different tokens" in claude
    assert "fix: ./winni manage install_agent_hooks --agent claude" in claude
    codex = out.split("\nCodex CLI\n", 1)[1].split("\n\n", 1)[0]
    assert "hook trusted" in codex and "fix: ./winni manage install_agent_hooks --agent codex" in codex
    # The fix it names fixes it.
    call_command("install_agent_hooks", "--agent", "claude", "--url", winni_server.url, "--token", live_token,
                 stdout=io.StringIO())
    call_command("install_agent_hooks", "--agent", "codex", "--url", winni_server.url, "--token", live_token,
                 stdout=io.StringIO())
    assert doctor("--cwd", str(project), "--prompt", PROMPT)[0] == 0
    # A project that was there before, or holds anything, stays.
    from core import projects

    projects.project_create(name="shop", path=str(project))
    assert doctor("--cwd", str(project), "--prompt", PROMPT)[0] == 0
    assert Project.objects.filter(slug="shop").exists()


def test_doctor_with_winni_down_says_how_to_start_it(home, settings, db):
    settings.WINNI_PORT = free_port()
    status, out, _ = doctor()
    assert status == 1
    assert f"Winni is not running at http://127.0.0.1:{settings.WINNI_PORT}" in out
    assert "start it: ./winni run" in out


def test_doctor_with_no_hooks_names_the_install_commands(winni_server, home, settings, transactional_db):
    # transactional_db, as every test of the live server: what the server commits (its first search
    # registers the active embedding model) is flushed after the test. Left behind under `db`, that
    # committed 'hash-bow' row was the active model of later tests on the same worker, whose own
    # vectors then matched nothing (semantic recall empty in tests/memory/test_embed_recall.py).
    settings.WINNI_PORT = int(winni_server.url.rsplit(":", 1)[1])
    status, out, _ = doctor()
    assert status == 1 and "No agent's Winni hooks are installed" in out
    assert "./winni manage install_agent_hooks --agent gemini" in out
    # A config file no agent can read is named, with its line.
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text('{"hooks": {\n')
    status, out, _ = doctor()
    assert status == 1 and f"PROBLEM: Gemini CLI: {home}/.gemini/settings.json, line 2" in out


def test_doctor_posts_claude_codes_http_hook_as_claude_code_would(winni_server, live_token, home, tmp_path):
    from memory import services as memory
    from memory import vectors

    project = tmp_path / "shop"
    project.mkdir()
    stored, _, _ = memory.memory_remember(content=MEMORY, tags=["decision"])
    vectors.embedding_store(kind="memory", ids=[stored.pk], build_index=False)
    call_command("install_agent_hooks", "--agent", "claude", "--hook-type", "http", "--url", winni_server.url,
                 "--token", live_token, stdout=io.StringIO())
    status, out, _ = doctor("--cwd", str(project), "--prompt", PROMPT)
    assert status == 0, out
    claude = out.split("\nClaude Code\n", 1)[1].split("\n\n", 1)[0]
    assert f"] {MEMORY}" in claude and "token: alice" in claude, claude
    assert "Not installed: Codex CLI, Gemini CLI, Copilot CLI" in out
