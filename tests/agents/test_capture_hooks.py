"""Capture from Claude Code hooks: the REST endpoints, the hook program itself (a real process
against a live Winni, and against no Winni at all), and the installer."""
import json
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from agents.management.commands.install_claude_hooks import HOOK_SCRIPT
from contexts import services as contexts
from conversations.models import Conversation, Message
from core import projects
from tests.support import free_port

SESSION = "0f0e6a3c-1111-4c1e-9d5e-000000000001"


def event(name, **fields):
    return {"session_id": SESSION, "transcript_path": f"/home/u/.claude/projects/-w/{SESSION}.jsonl",
            "cwd": "/work/alpha", "hook_event_name": name, **fields}


def post(api, payload, **extra):
    return api.post("/api/v1/capture/events", {"payload": payload, **extra}, format="json")


@pytest.mark.django_db
class TestEventsApi:
    def test_prompt_tool_and_reply_go_into_one_conversation_in_order(self, api):
        assert post(api, event("UserPromptSubmit", prompt="What is 2+2?"), git_branch="main", project="alpha").status_code == 201
        tool = event("PostToolUse", tool_name="Bash", tool_input={"command": "echo 4"},
                     tool_response={"stdout": "4"}, tool_use_id="toolu_1")
        assert post(api, tool).status_code == 201
        reply = post(api, event("Stop", last_assistant_message="It is 4."))
        assert reply.status_code == 201 and reply.json()["turn_number"] == 3
        conversation = Conversation.objects.get()
        assert conversation.session_id == SESSION
        assert conversation.metadata == {"source": "claude-code", "cwd": "/work/alpha", "git_branch": "main",
                                         "transcript_path": event("x")["transcript_path"]}
        # No project "alpha" existed: the working directory (not on this machine) identifies it.
        assert conversation.project.slug == "alpha"
        assert list(conversation.project.keys.values_list("kind", "value")) == [("cwd", "/work/alpha")]
        rows = list(conversation.messages.order_by("turn_number").values_list("role", "content", "metadata"))
        assert [r[0] for r in rows] == ["user", "tool", "assistant"]
        assert json.loads(rows[1][1]) == {"tool_name": "Bash", "tool_input": {"command": "echo 4"},
                                          "tool_response": {"stdout": "4"}}
        assert rows[1][2]["tool_use_id"] == "toolu_1"
        assert rows[2][1] == "It is 4."

    def test_a_retried_event_is_stored_once(self, api):
        body = {"event_id": "ev-1", "captured_at": "2026-11-21T10:00:00.000001Z"}
        assert post(api, event("UserPromptSubmit", prompt="hi"), **body).status_code == 201
        again = post(api, event("UserPromptSubmit", prompt="hi"), **body)
        assert again.status_code == 200 and again.json()["reason"] == "duplicate"
        message = Message.objects.get()
        assert message.created_at.isoformat() == "2026-11-21T10:00:00.000001+00:00"

    def test_nul_characters_do_not_lose_the_prompt(self, api):
        assert post(api, event("UserPromptSubmit", prompt="before\x00after")).status_code == 201
        assert Message.objects.get().content == "before\ufffdafter"

    def test_large_tool_output_is_capped(self, api, settings):
        settings.WINNI_CAPTURE_TOOL_MAX_CHARS = 500
        post(api, event("PostToolUse", tool_name="Read", tool_input={}, tool_response="x" * 5000))
        content = Message.objects.get().content
        assert len(content) < 600 and "truncated by Winni" in content

    def test_events_without_a_message_store_nothing(self, api):
        assert post(api, event("Stop", last_assistant_message="")).json()["stored"] is False
        assert post(api, event("SessionStart", source="startup")).json() == {
            "stored": False, "conversation_id": None, "message_id": None, "turn_number": None,
            "reason": "SessionStart stores no message", "checkpoint_job_id": None}
        assert post(api, event("SessionEnd", reason="clear")).json()["reason"] == "SessionEnd: nothing to checkpoint"
        assert Conversation.objects.count() == 0

    @pytest.mark.parametrize(
        ("payload", "field"),
        [
            ([1, 2], "payload"),
            ({"hook_event_name": "UserPromptSubmit", "prompt": "x"}, "payload.session_id"),
            ({"session_id": SESSION, "prompt": "x"}, "payload.hook_event_name"),
            (event("Bogus"), "payload.hook_event_name"),
            (event("UserPromptSubmit"), "payload.prompt"),
            (event("UserPromptSubmit", prompt="   "), "payload.prompt"),
            (event("PostToolUse", tool_input={}), "payload.tool_name"),
        ],
    )
    def test_bad_events_name_the_field_and_write_nothing(self, api, payload, field):
        response = post(api, payload)
        assert response.status_code == 400
        assert field in response.json()["error"]["fields"], response.json()
        assert Conversation.objects.count() == 0 and Message.objects.count() == 0

    def test_a_prompt_over_the_size_limit_is_413(self, api):
        assert post(api, event("UserPromptSubmit", prompt="x" * (1024 * 1024 + 1))).status_code == 413
        assert Message.objects.count() == 0

    def test_a_batch_stores_each_event_and_reports_the_refused_ones(self, api):
        events = [{"payload": event("UserPromptSubmit", prompt="one"), "event_id": "a"},
                  {"payload": event("UserPromptSubmit"), "event_id": "b"},
                  {"payload": "not an object"},
                  {"payload": event("Stop", last_assistant_message="two"), "event_id": "c"},
                  {"payload": event("UserPromptSubmit", prompt="one"), "event_id": "a"}]
        results = api.post("/api/v1/capture/events/batch", {"events": events}, format="json").json()["results"]
        assert [r["stored"] for r in results] == [True, False, False, True, False]
        assert "events[1]" in results[1]["error"] and "payload.prompt" in results[1]["error"]
        assert "events[2]" in results[2]["error"]
        assert results[4]["reason"] == "duplicate"
        assert list(Message.objects.order_by("turn_number").values_list("content", flat=True)) == ["one", "two"]
        bad = api.post("/api/v1/capture/events/batch", {"events": "x"}, format="json")
        assert bad.status_code == 400 and "events" in bad.json()["error"]["fields"]

    def test_events_need_a_token(self, anonymous_api):
        assert post(anonymous_api, event("UserPromptSubmit", prompt="x")).status_code == 401


@pytest.mark.django_db
class TestSessionStartApi:
    def test_it_returns_the_active_context_within_the_budget(self, api, settings):
        assert api.get("/api/v1/capture/session-start?source=startup").json() == {"text": ""}
        contexts.context_set(name="alpha", content="Use tabs.\n" * 100, actor="t")
        text = api.get("/api/v1/capture/session-start?source=clear&cwd=/w/alpha").json()["text"]
        assert text.startswith("# Startup context: alpha (from Winni)\n\nUse tabs.")
        settings.WINNI_CAPTURE_SESSION_START_CHARS = 300
        short = api.get("/api/v1/capture/session-start?source=compact").json()["text"]
        assert len(short) < 400 and "truncated by Winni" in short

    def test_a_bad_source_names_the_field(self, api):
        response = api.get("/api/v1/capture/session-start?source=later")
        assert response.status_code == 400 and "source" in response.json()["error"]["fields"]


def run_hook(payload, *, env, config=None):
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    args = [sys.executable, "-I", "-S", str(HOOK_SCRIPT)] + (["--config", str(config)] if config else [])
    return subprocess.run(args, input=raw, capture_output=True, text=True, env=env, timeout=30)


@pytest.fixture
def hook_env(tmp_path):
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WINNI_HOOK_SPOOL": str(tmp_path / "spool.jsonl"),
            "WINNI_HOOK_LOG": str(tmp_path / "hook.log"), "WINNI_HOOK_TIMEOUT": "2"}


@pytest.mark.live
def test_the_hook_program_posts_events_and_prints_the_startup_text(winni_server, live_token, hook_env, tmp_path):
    config = tmp_path / "hook.json"
    config.write_text(json.dumps({"url": winni_server.url, "token": live_token}))
    contexts.context_set(name="alpha", content="ALPHA RULES", actor="t")
    start = run_hook(event("SessionStart", source="startup"), env=hook_env, config=config)
    assert start.returncode == 0 and "ALPHA RULES" in start.stdout
    unknown_source = run_hook(event("SessionStart", source="teleport"), env=hook_env, config=config)
    assert "ALPHA RULES" in unknown_source.stdout
    for payload in (event("UserPromptSubmit", prompt="hello"), event("Stop", last_assistant_message="hi there")):
        result = run_hook(payload, env=hook_env, config=config)
        assert (result.returncode, result.stdout) == (0, "")
    conversation = Conversation.objects.get(session_id=SESSION)
    assert list(conversation.messages.values_list("role", "content")) == [("user", "hello"), ("assistant", "hi there")]


@pytest.mark.live
def test_when_winni_is_down_events_are_spooled_and_sent_in_order_later(winni_server, live_token, hook_env):
    down = {**hook_env, "WINNI_URL": f"http://127.0.0.1:{free_port()}", "WINNI_TOKEN": live_token}
    for prompt in ("one", "two"):
        assert run_hook(event("UserPromptSubmit", prompt=prompt), env=down).returncode == 0
    spool = [json.loads(line) for line in open(hook_env["WINNI_HOOK_SPOOL"])]
    assert [e["payload"]["prompt"] for e in spool] == ["one", "two"]
    assert "unreachable" in open(hook_env["WINNI_HOOK_LOG"]).read()
    assert Message.objects.count() == 0
    # A wrong token is kept for later too (the user will fix it), not dropped.
    bad_token = {**hook_env, "WINNI_URL": winni_server.url, "WINNI_TOKEN": "winni_wrong"}
    assert run_hook(event("UserPromptSubmit", prompt="three"), env=bad_token).returncode == 0
    # An event Winni will refuse (no prompt) sits in the spool too; it must not block the others.
    assert run_hook(event("UserPromptSubmit", prompt=None), env=down).returncode == 0
    up = {**hook_env, "WINNI_URL": winni_server.url, "WINNI_TOKEN": live_token}
    assert run_hook(event("Stop", last_assistant_message="four"), env=up).returncode == 0
    assert list(Message.objects.order_by("turn_number").values_list("content", flat=True)) == [
        "one", "two", "three", "four"]
    assert open(hook_env["WINNI_HOOK_SPOOL"]).read() == ""
    assert "refused a spooled event: events[3]" in open(hook_env["WINNI_HOOK_LOG"]).read()


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", '{"hook_event_name": "Stop"}', '{"session_id": 5}'])
def test_malformed_hook_input_exits_0_and_is_logged(hook_env, stdin):
    result = run_hook(stdin, env={**hook_env, "WINNI_URL": f"http://127.0.0.1:{free_port()}"})
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert "malformed" in open(hook_env["WINNI_HOOK_LOG"]).read()


def test_session_start_prints_nothing_when_winni_is_down(hook_env):
    result = run_hook(event("SessionStart", source="resume"), env={**hook_env, "WINNI_URL": f"http://127.0.0.1:{free_port()}"})
    assert (result.returncode, result.stdout) == (0, "")


@pytest.mark.django_db
class TestInstaller:
    def test_it_merges_into_existing_settings_and_is_idempotent(self, tmp_path, monkeypatch, capsys):
        monkeypatch.setenv("HOME", str(tmp_path))
        project = tmp_path / "proj"
        (project / ".claude").mkdir(parents=True)
        own = {"type": "command", "command": "echo mine"}
        settings_file = project / ".claude" / "settings.json"
        settings_file.write_text(json.dumps({"model": "opus", "hooks": {"Stop": [{"hooks": [own]}]}}))
        for _ in range(2):
            call_command("install_claude_hooks", "--project", str(project), "--token", "winni_x",
                         "--url", "http://127.0.0.1:9999/")
        merged = json.loads(settings_file.read_text())
        assert merged["model"] == "opus"
        assert merged["hooks"]["Stop"][0] == {"hooks": [own]}
        assert len(merged["hooks"]["Stop"]) == 2
        for name in ("SessionStart", "UserPromptSubmit", "PostToolUse", "PreCompact", "SessionEnd"):
            assert len(merged["hooks"][name]) == 1
            assert str(HOOK_SCRIPT) in merged["hooks"][name][0]["hooks"][0]["command"]
        assert merged["hooks"]["PostToolUse"][0]["matcher"] == "*"
        config = tmp_path / ".config" / "winni" / "claude-hook.json"
        assert json.loads(config.read_text()) == {"url": "http://127.0.0.1:9999", "token": "winni_x", "timeout": 2}
        assert config.stat().st_mode & 0o777 == 0o600
        out = capsys.readouterr().out
        assert 'claude mcp add --transport http winni http://127.0.0.1:9999/mcp --header "Authorization: Bearer winni_x"' in out

    def test_dry_run_prints_and_writes_nothing(self, tmp_path, monkeypatch, capsys):
        monkeypatch.setenv("HOME", str(tmp_path))
        call_command("install_claude_hooks", "--user", "--dry-run")
        printed = json.loads(capsys.readouterr().out)
        assert set(printed["hooks"]) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact",
                                         "SessionEnd"}
        assert not (tmp_path / ".claude").exists() and not (tmp_path / ".config").exists()

    def test_it_creates_a_token_when_none_is_given(self, tmp_path, monkeypatch, capsys):
        monkeypatch.setenv("HOME", str(tmp_path))
        call_command("install_claude_hooks", "--user", "--token-name", "laptop")
        secret = json.loads((tmp_path / ".config/winni/claude-hook.json").read_text())["token"]
        assert secret.startswith("winni_") and secret in capsys.readouterr().out
        with pytest.raises(CommandError, match="laptop"):
            call_command("install_claude_hooks", "--user", "--token-name", "laptop")

    def test_a_broken_settings_file_is_left_alone(self, tmp_path, monkeypatch):
        monkeypatch.setenv("HOME", str(tmp_path))
        (tmp_path / ".claude").mkdir()
        (tmp_path / ".claude" / "settings.json").write_text("{not json")
        with pytest.raises(CommandError, match="not valid JSON"):
            call_command("install_claude_hooks", "--user", "--token", "winni_x")
        assert (tmp_path / ".claude" / "settings.json").read_text() == "{not json"
        assert not (tmp_path / ".config").exists()
        with pytest.raises(CommandError, match="not a directory"):
            call_command("install_claude_hooks", "--project", str(tmp_path / "missing"), "--token", "winni_x")


@pytest.mark.django_db
class TestMedallions:
    """SessionStart prints the project's latest medallions; PreCompact/SessionEnd checkpoint."""

    def test_session_start_prints_the_projects_medallions_after_the_context(self, api, settings):
        from medallions import services as medallions
        from tests.medallion_support import document

        projects.project_create(name="alpha")
        projects.project_create(name="beta", path="/home/u/beta")
        contexts.context_set(name="alpha", content="CONTEXT FIRST", actor="t")
        medallions.medallion_create(document=document({"graph_nodes": [], "tags": ["repo:alpha"]}), actor="t")
        medallions.medallion_create(document=document({"graph_nodes": [], "tags": ["repo:beta"]},
                                                      summary={"high_level": "BETA ONLY", "subsystems": []}), actor="t")
        text = api.get("/api/v1/capture/session-start?source=startup&cwd=/w/x&project=alpha").json()["text"]
        assert text.index("CONTEXT FIRST") < text.index("# Project checkpoints for alpha")
        assert "Muse is a CLI for music notes." in text and "BETA ONLY" not in text
        # The working directory (here a subfolder of beta's known git root) finds the project.
        assert "BETA ONLY" in api.get("/api/v1/capture/session-start?cwd=/home/u/beta/src").json()["text"]
        # Without a project nothing but the global context (an empty scope would match every medallion).
        assert api.get("/api/v1/capture/session-start").json()["text"] == "# Startup context: alpha (from Winni)\n\nCONTEXT FIRST"
        # A folder no project knows shows no project's medallions either.
        assert "Project checkpoints" not in api.get("/api/v1/capture/session-start?cwd=/w/x").json()["text"]
        settings.WINNI_CAPTURE_SESSION_START_MEDALLIONS = 0
        assert "Project checkpoints" not in api.get("/api/v1/capture/session-start?project=alpha").json()["text"]

    def test_session_end_checkpoints_the_session_into_the_projects_medallion(self, api, django_capture_on_commit_callbacks):
        from medallions.models import Medallion, MedallionJob

        post(api, event("UserPromptSubmit", prompt="We decided to use PostgreSQL arrays for scopes."), project="alpha")
        post(api, event("Stop", last_assistant_message="Done. TODO: add a backup job."), project="alpha")
        with django_capture_on_commit_callbacks(execute=True):
            ended = post(api, event("SessionEnd", reason="clear"), project="alpha").json()
        assert ended["reason"] == "SessionEnd: checkpoint queued" and ended["checkpoint_job_id"]
        job = MedallionJob.objects.get(pk=ended["checkpoint_job_id"])
        assert job.status == "done" and job.actor == "alice"
        assert job.evidence["conversation_id"] == str(Conversation.objects.get().id)
        medallion = Medallion.objects.get()
        assert medallion.tags == ["repo:alpha"] and medallion.graph_nodes == []
        text = api.get("/api/v1/capture/session-start?source=clear&project=alpha").json()["text"]
        assert "#repo:alpha" in text

    def test_no_checkpoint_without_messages_or_when_turned_off(self, api, settings):
        from medallions.models import MedallionJob

        assert post(api, event("PreCompact", trigger="auto"), project="alpha").json()["reason"] == (
            "PreCompact: nothing to checkpoint")
        post(api, event("UserPromptSubmit", prompt="hello"), project="alpha")
        settings.WINNI_CAPTURE_CHECKPOINT = False
        assert "checkpoints are off" in post(api, event("SessionEnd", reason="exit"), project="alpha").json()["reason"]
        assert MedallionJob.objects.count() == 0
