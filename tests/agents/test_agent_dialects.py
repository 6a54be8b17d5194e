"""The hook program's dialects: Codex CLI, Gemini CLI and GitHub Copilot CLI payloads (files in
tests/data/agent_payloads: `*-documented.json` are written from each agent's documented schema,
`*-captured.json` were captured from the real CLIs) become Winni's common event, and the context
Winni injects is printed the way each agent reads it."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agents import dialects
from agents.management.commands.install_claude_hooks import HOOK_SCRIPT
from contexts import services as contexts
from conversations.models import Conversation
from tests.support import ROOT, free_port

PAYLOADS = ROOT / "tests" / "data" / "agent_payloads"


def payload_file(name):
    data = json.loads((PAYLOADS / name).read_text())
    assert data["origin"].startswith(("documented schema", "captured"))
    return data


def normalized(data, transcript=None):
    out = []
    for item in data["events"]:
        item = dict(item)
        hint = item.pop("--event", None)
        for key in ("transcriptPath", "transcript_path"):
            if item.get(key) == "TRANSCRIPT":
                item[key] = str(transcript)
        out.append(dialects.normalize(data["agent"], item, hint))
    return out


def copilot_transcript(tmp_path):
    """A Copilot events file ending in an assistant message (the shape of the file the real CLI
    wrote: tests/data/agent_payloads/copilot-1.0.102-events.jsonl)."""
    path = tmp_path / "events.jsonl"
    lines = [{"type": "user.message", "data": {"content": "list the files"}},
             {"type": "assistant.message", "data": {"content": "There is one file: README.md."}},
             {"type": "assistant.message", "data": {"content": ""}}, "not json"]
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


EXPECTED = [
    ("SessionStart", {"source": "startup"}),
    ("UserPromptSubmit", {"prompt": "list the files"}),
    None,  # PreToolUse / BeforeTool: not captured
    ("PostToolUse", {"tool_name": None}),
    ("Stop", {"last_assistant_message": "There is one file: README.md."}),
]


@pytest.mark.parametrize("name", ["codex-documented.json", "gemini-documented.json", "copilot-documented.json"])
def test_documented_payloads_map_to_the_common_events(name, tmp_path):
    data = payload_file(name)
    events = normalized(data, copilot_transcript(tmp_path))
    for got, expected in zip(events, EXPECTED, strict=False):
        if expected is None:
            assert got is None
            continue
        assert got["hook_event_name"] == expected[0]
        assert got["session_id"] and got["cwd"] == "/work/alpha"
        for key, value in expected[1].items():
            if value is not None:
                assert got[key] == value, (name, key)
    tool = events[3]
    assert tool["tool_name"] in ("Bash", "list_directory", "bash")
    assert isinstance(tool["tool_input"], dict)  # Copilot's JSON string arguments are parsed
    assert "README.md" in json.dumps(tool["tool_response"])
    # Unknown fields (turn_id, model, timestamp, mcp_context, ...) ride along raw, set apart.
    assert all(set(e) <= {"hook_event_name", "session_id", "cwd", "transcript_path", "agent_event", "source",
                          "prompt", "last_assistant_message", "tool_name", "tool_input", "tool_response",
                          "tool_use_id", "unknown_fields"} for e in events if e)
    assert all(not set(e.get("unknown_fields", {})) & {"session_id", "sessionId", "cwd"}
               for e in events if e)
    # The checkpoint events: PreCompact for all, SessionEnd where the agent has one.
    tail = [e["hook_event_name"] for e in events[5:] if e]
    assert tail in (["PreCompact"], ["PreCompact", "SessionEnd"], ["SessionEnd"])


@pytest.mark.parametrize("agent", ["codex", "gemini", "copilot"])
def test_payloads_captured_from_the_real_clis_map_to_the_common_events(agent):
    data = payload_file(f"{agent}-captured.json")
    assert data["origin"].startswith("captured")
    events = normalized(data, PAYLOADS / "copilot-1.0.102-events.jsonl")
    names = [e["hook_event_name"] for e in events if e]
    assert [n for n in names if n != "SessionEnd"] == ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"]
    by_name = {e["hook_event_name"]: e for e in events if e}
    assert len({e["session_id"] for e in events if e}) == 1 and all(e["cwd"] for e in events if e)
    assert by_name["UserPromptSubmit"]["prompt"] == "USE_TOOL list the files"
    tool = by_name["PostToolUse"]
    assert tool["tool_name"] in ("exec_command", "Bash", "list_directory", "bash") and tool["tool_input"]
    assert tool["tool_response"] is not None
    # The reply after the tool: Codex and Gemini carry it; Copilot's is read from its events file.
    assert by_name["Stop"]["last_assistant_message"].startswith("Tool said: ")


def test_copilot_reads_both_of_its_payload_forms():
    camel = dialects.normalize("copilot", {"sessionId": "s", "cwd": "/w", "toolName": "view",
                                           "toolArgs": {"path": "a"}, "toolResult": {"textResultForLlm": "x"}},
                               "postToolUse")
    pascal = dialects.normalize("copilot", {"hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/w",
                                            "tool_name": "Read", "tool_input": {"path": "a"},
                                            "tool_result": {"text_result_for_llm": "x"}}, "postToolUse")
    assert camel["hook_event_name"] == pascal["hook_event_name"] == "PostToolUse"
    assert camel["agent_event"] == "postToolUse" and "agent_event" not in pascal
    assert camel["tool_input"] == pascal["tool_input"] == {"path": "a"}
    # Copilot's "new" session source becomes "startup".
    assert dialects.normalize("copilot", {"sessionId": "s", "source": "new"}, "sessionStart")["source"] == "startup"


@pytest.mark.parametrize(("agent", "payload", "hint"), [
    ("codex", {"hook_event_name": "Stop"}, None),  # no session id
    ("codex", {"session_id": "s"}, None),  # no event name
    ("copilot", {"sessionId": 7}, "agentStop"),
    ("cursor", {"hook_event_name": "Stop", "session_id": "s"}, None),
])
def test_unreadable_payloads_raise(agent, payload, hint):
    with pytest.raises(dialects.Unreadable):
        dialects.normalize(agent, payload, hint)


@pytest.mark.parametrize("raw", ["", "nope", "[1]", "3"])
def test_parse_refuses_what_is_not_a_json_object(raw):
    with pytest.raises(dialects.Unreadable):
        dialects.parse(raw)


def test_context_output_speaks_each_agents_format():
    assert dialects.context_output("claude", "SessionStart", "RULES") == "RULES"
    assert json.loads(dialects.context_output("codex", "SessionStart", "RULES")) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "RULES"}}
    assert json.loads(dialects.context_output("gemini", "UserPromptSubmit", "RULES")) == {
        "hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": "RULES"}}
    assert json.loads(dialects.context_output("copilot", "SessionStart", "RULES")) == {"additionalContext": "RULES"}
    assert all(dialects.context_output(agent, "SessionStart", "") == "" for agent in dialects.AGENTS)


# --- the hook program with --agent, against a live Winni -----------------------------------------


def run_hook(payload, *, env, agent, event=None, config=None):
    args = [sys.executable, "-I", "-S", str(HOOK_SCRIPT), "--agent", agent]
    args += (["--event", event] if event else []) + (["--config", str(config)] if config else [])
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(args, input=raw, capture_output=True, text=True, env=env, timeout=30)


@pytest.fixture
def hook_env(tmp_path):
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WINNI_HOOK_SPOOL": str(tmp_path / "spool.jsonl"),
            "WINNI_HOOK_LOG": str(tmp_path / "hook.log"), "WINNI_HOOK_TIMEOUT": "2"}


@pytest.mark.live
@pytest.mark.parametrize(("name", "source"), [("codex-documented.json", "codex"),
                                              ("gemini-documented.json", "gemini-cli"),
                                              ("copilot-documented.json", "copilot-cli")])
def test_the_hook_program_captures_each_agent(name, source, winni_server, live_token, hook_env, tmp_path):
    contexts.context_set(name="alpha", content="ALPHA RULES", actor="t")
    env = {**hook_env, "WINNI_URL": winni_server.url, "WINNI_TOKEN": live_token}
    data = payload_file(name)
    transcript = copilot_transcript(tmp_path)
    outputs = []
    for item in data["events"]:
        item = dict(item)
        hint = item.pop("--event", None)
        if item.get("transcriptPath") == "TRANSCRIPT":
            item["transcriptPath"] = str(transcript)
        result = run_hook(item, env=env, agent=data["agent"], event=hint)
        assert (result.returncode, result.stderr) == (0, "")
        outputs.append(result.stdout)
    # SessionStart printed the context in the agent's own format; nothing else printed anything.
    start = json.loads(outputs[0])
    assert "ALPHA RULES" in (start.get("additionalContext") or start["hookSpecificOutput"]["additionalContext"])
    assert outputs[1:] == [""] * (len(outputs) - 1)
    conversation = Conversation.objects.get()
    assert conversation.metadata["source"] == source and conversation.metadata["cwd"] == "/work/alpha"
    rows = list(conversation.messages.order_by("turn_number").values_list("role", "content"))
    assert [role for role, _ in rows] == ["user", "tool", "assistant"]
    assert rows[0][1] == "list the files" and rows[2][1] == "There is one file: README.md."
    assert "README.md" in rows[1][1]


def test_an_unreadable_payload_is_logged_and_kept_never_an_error(hook_env):
    env = {**hook_env, "WINNI_URL": f"http://127.0.0.1:{free_port()}"}
    for raw in ("{not json", json.dumps({"sessionId": "s"})):
        result = run_hook(raw, env=env, agent="copilot")
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert "malformed copilot hook input" in open(hook_env["WINNI_HOOK_LOG"]).read()
    kept = [json.loads(line) for line in open(Path(hook_env["WINNI_HOOK_SPOOL"]).parent / "claude-hook-unreadable.log")]
    assert [k["stdin"] for k in kept] == ["{not json", json.dumps({"sessionId": "s"})]
    assert kept[0]["argv"] == ["--agent", "copilot"]
    # An event Winni does not capture (Codex's PermissionRequest) is not an error and not kept.
    result = run_hook({"hook_event_name": "PermissionRequest", "session_id": "s"}, env=env, agent="codex")
    assert (result.returncode, result.stdout) == (0, "")
    assert not Path(hook_env["WINNI_HOOK_SPOOL"]).exists() or Path(hook_env["WINNI_HOOK_SPOOL"]).read_text() == ""


@pytest.mark.django_db
def test_the_events_api_files_each_agents_conversations_under_its_source(api):
    for agent in dialects.AGENTS:
        payload = {"hook_event_name": "UserPromptSubmit", "session_id": "same-id", "cwd": "/work/alpha",
                   "prompt": f"hello from {agent}"}
        response = api.post("/api/v1/capture/events", {"payload": payload, "agent": agent}, format="json")
        assert response.status_code == 201, response.json()
    sources = dict(Conversation.objects.values_list("metadata__source", "messages__content"))
    assert sources == {source: f"hello from {agent}" for agent, source in dialects.SOURCES.items()}
    # One project for all four: the same working directory.
    assert Conversation.objects.values("project").distinct().count() == 1
    refused = api.post("/api/v1/capture/events", {"payload": {"hook_event_name": "Stop", "session_id": "x"},
                                                   "agent": "cursor"}, format="json")
    assert refused.status_code == 400 and "agent" in refused.json()["error"]["fields"]


@pytest.mark.django_db
def test_the_admin_filters_conversations_by_agent_and_the_dashboard_charts_them(client, staff_user):
    from conversations import services
    from tests.winni_site.test_admin_pages import marks

    for session, source in [("s1", "codex"), ("s2", "codex"), ("s3", "gemini-cli"), ("s4", "claude-code"),
                            ("s5", None)]:
        services.messages_store_bulk(session_id=session, messages=[{"role": "user", "content": "hi"}],
                                     metadata={"source": source} if source else None)
    client.force_login(staff_user)
    listing = client.get("/admin/conversations/conversation/")
    assert "Codex CLI" in listing.content.decode() and "Gemini CLI" in listing.content.decode()
    for value, sessions in [("codex", {"s1", "s2"}), ("gemini-cli", {"s3"}), ("api", {"s5"})]:
        page = client.get("/admin/conversations/conversation/", {"source": value})
        assert {c.session_id for c in page.context["cl"].result_list} == sessions
    chart = marks(client.get("/admin/").content.decode(), "Conversations per session source")
    assert chart["Codex CLI"] == "2" and chart["Gemini CLI"] == "1" and chart["Claude Code"] == "1"


def test_gemini_prompts_lose_the_session_start_text_the_cli_put_before_them():
    prompt = "<hook_context># Startup context: alpha\n\nRULES</hook_context>\n\nfirst question"
    event = dialects.normalize("gemini", {"hook_event_name": "BeforeAgent", "session_id": "s", "prompt": prompt})
    assert event["prompt"] == "first question"
    assert dialects.strip_hook_context("no context here") == "no context here"
    # Gemini's PreCompress fires on every headless turn: it is not taken as a checkpoint.
    assert dialects.normalize("gemini", {"hook_event_name": "PreCompress", "session_id": "s"}) is None


def test_copilots_reply_is_the_one_of_the_turn_that_ended(tmp_path):
    """Copilot's Stop names no turn and the CLI may not have written the turn yet: the hook keeps
    each session's last prompt and reads the reply that follows that prompt."""
    events = tmp_path / "events.jsonl"
    old = [{"type": "user.message", "data": {"content": "first"}},
           {"type": "assistant.message", "data": {"content": "reply one", "toolRequests": []}}]
    events.write_text("".join(json.dumps(e) + "\n" for e in old))
    assert dialects.last_reply("copilot", str(events), "second", wait_seconds=0.2) is None  # not written yet
    with events.open("a") as handle:
        for item in ({"type": "user.message", "data": {"content": "second"}},
                     {"type": "assistant.message", "data": {"content": "", "toolRequests": [{"name": "bash"}]}},
                     {"type": "assistant.message", "data": {"content": "reply two", "toolRequests": []}}):
            handle.write(json.dumps(item) + "\n")
    assert dialects.last_reply("copilot", str(events), "second", wait_seconds=0.2) == "reply two"
    state = str(tmp_path / "prompts.json")
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": "second"}
    dialects.normalize("copilot", prompt, None, state)
    stop = {"hook_event_name": "Stop", "session_id": "s", "transcript_path": str(events)}
    assert dialects.normalize("copilot", stop, None, state)["last_assistant_message"] == "reply two"
