"""Real agent traffic through every stage. tests/data/traffic/ holds what Claude Code, Codex CLI,
Gemini CLI and Copilot CLI really piped to their hooks and wrote to their session files
(tests/record_traffic.py recorded them headless against the suite's fake models; a Windows-shaped
variant is derived from the Claude recording). Each recorded hook call is replayed, in order, as
the body the hook program posts (tests/traffic_corpus.py), through POST /api/v1/capture/events,
and every stage is checked: capture (nothing lost), scrubbing (the planted token is nowhere),
the checkpoint at SessionEnd/PreCompact, file recall, automatic recall of the first session's
decision, the admin transcript; then the saved session files through transcript import."""
from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from agents import dialects as agent_dialects
from agents import transcripts as agent_transcripts
from conversations.models import Conversation, Message
from tests.traffic_corpus import (
    DECISION_WORDS,
    FAKE_SECRET,
    LATER_PROMPT,
    TRAFFIC,
    Call,
    corpus_dirs,
    hook_calls,
)

FOLDERS = corpus_dirs()
RECORDED = [f for f in FOLDERS if f.parent == TRAFFIC]


def folder_id(folder: Path) -> str:
    return str(folder.relative_to(TRAFFIC))


def replay(api, calls: list[Call], capture_on_commit) -> list[tuple[Call, int, dict]]:
    answered = []
    for call in calls:
        if call.body is None:
            continue
        with capture_on_commit(execute=True):
            response = api.post("/api/v1/capture/events", call.body, format="json")
        answered.append((call, response.status_code, response.json()))
    return answered


def test_the_corpus_is_there_and_small():
    assert {f.name.split("-")[0] for f in RECORDED} >= {"claude", "codex", "gemini", "copilot"}
    size = sum(p.stat().st_size for p in TRAFFIC.rglob("*") if p.is_file())
    assert size < 2 * 1024 * 1024, f"the corpus grew to {size} bytes"


@pytest.mark.django_db
@pytest.mark.parametrize("folder", FOLDERS, ids=folder_id)
def test_every_hook_call_goes_through_every_stage(folder, api, tmp_path, django_capture_on_commit_callbacks,
                                                  admin_client):
    calls = hook_calls(folder, tmp_path)
    answered = replay(api, calls, django_capture_on_commit_callbacks)
    refused = [(c.index, status, answer) for c, status, answer in answered if status >= 300]
    assert not refused, f"the server refused recorded events: {refused[:3]}"

    # Capture: every prompt, reply and tool call is stored, in order, in its session's conversation.
    sent = [c.body["payload"] for c, _, _ in answered]
    prompts = [p for p in sent if p["hook_event_name"] == "UserPromptSubmit"]
    tools = [p for p in sent if p["hook_event_name"] == "PostToolUse"]
    replies = [p for p in sent if p["hook_event_name"] == "Stop" and (p.get("last_assistant_message") or "").strip()]
    assert prompts and replies, "the recording holds no prompt or no reply"
    source = agent_dialects.SOURCES[calls[0].agent]
    messages = Message.objects.filter(conversation__metadata__source=source)
    assert messages.filter(role="user").count() == len(prompts)
    assert messages.filter(role="tool").count() == len(tools)
    assert messages.filter(role="assistant").count() == len(replies)
    stored_prompts = list(messages.filter(role="user").order_by("created_at", "turn_number")
                          .values_list("content", flat=True))
    for prompt, stored in zip(prompts, stored_prompts):
        if FAKE_SECRET in prompt["prompt"]:
            assert stored.split(" with the token")[0] == prompt["prompt"].split(" with the token")[0]
        else:
            assert stored == prompt["prompt"]
    # A tool output over 100 KB (Claude Code's Write of a long file, Gemini's shell output) is
    # stored cut to WINNI_CAPTURE_TOOL_MAX_CHARS, saying so.
    from django.conf import settings

    if max(len(json.dumps(p)) for p in tools or [{}]) > 100_000:
        longest = max(messages.filter(role="tool").values_list("content", flat=True), key=len)
        assert "[truncated by Winni:" in longest
        assert len(longest) < settings.WINNI_CAPTURE_TOOL_MAX_CHARS + 100
    for conversation in Conversation.objects.filter(metadata__source=source):
        turns = list(conversation.messages.order_by("turn_number").values_list("turn_number", flat=True))
        assert turns == list(range(1, len(turns) + 1))
        assert conversation.project is not None
        if "windows" not in folder.name:  # see test_a_windows_repository_is_named_after_its_folder
            assert conversation.project.slug == "shop"

    # Scrubbing: the token planted in a prompt (and in a command's output) is stored nowhere.
    assert any(FAKE_SECRET in json.dumps(c.body) for c, _, _ in answered), "the recording lost the planted token"
    assert not Message.objects.filter(content__contains=FAKE_SECRET).exists()
    # Nor in the raw fields kept with the messages (Gemini's AfterAgent repeats the prompt).
    assert not Message.objects.filter(metadata__icontains=FAKE_SECRET).exists()
    assert not Conversation.objects.filter(metadata__icontains=FAKE_SECRET).exists()

    # The checkpoint each SessionEnd/PreCompact queued ended done, with named subsystems.
    from medallions.models import Medallion, MedallionJob

    jobs = [answer["checkpoint_job_id"] for _, _, answer in answered if answer.get("checkpoint_job_id")]
    checkpoints = [p for p in sent if p["hook_event_name"] in ("SessionEnd", "PreCompact")]
    if checkpoints:
        assert jobs, "no checkpoint was queued"
    # (Checked last, so one failing checkpoint does not hide the later stages.)
    failed_checkpoints = [f"{job.status}: {job.error[:200]}" for job in MedallionJob.objects.filter(pk__in=jobs)
                          if job.status != "done"]
    for medallion in Medallion.objects.all():
        assert FAKE_SECRET not in json.dumps([medallion.summary, medallion.decisions, medallion.open_questions])
        for subsystem in medallion.summary.get("subsystems") or []:
            name = subsystem.get("name") or ""
            assert name.strip() and not name.startswith(("/", "C:")), f"subsystem named {name!r}"

    # File recall: every file-touching PostToolUse was answered (possibly with nothing).
    for call, status, answer in answered:
        if call.event == "PostToolUse" and call.body.get("recall"):
            assert status == 201 and isinstance(answer.get("additional_context"), str)

    # File recall in a later session: the first file-touching call on the invoice module, made again
    # in a new session, brings back what the first session decided about that file.
    first_touch = next((c for c, _, _ in answered if c.event == "PostToolUse" and c.body.get("recall")
                        and "invoice.py" in json.dumps(c.body["payload"].get("tool_input"))), None)
    if first_touch is not None:
        again = json.loads(json.dumps(first_touch.body))
        again["payload"]["session_id"] = "a-later-session"
        again["event_id"] = "a-later-session-1"
        answer = api.post("/api/v1/capture/events", again, format="json").json()
        assert DECISION_WORDS in answer["additional_context"], (first_touch.body["payload"]["tool_input"], answer)

    # Automatic recall: the later session's question is answered with the first session's decision.
    later = [answer for call, _, answer in answered
             if call.event == "UserPromptSubmit" and call.body["payload"]["prompt"] == LATER_PROMPT]
    assert later, "the recording has no later prompt"
    assert DECISION_WORDS in later[0]["additional_context"], later[0]["additional_context"][:500]

    # The admin transcript shows each conversation with its tool lines.
    from conversations.admin import transcript_url

    for conversation in Conversation.objects.filter(metadata__source=source):
        page = admin_client.get(transcript_url(conversation.pk))
        assert page.status_code == 200
        html = page.content.decode()
        for name in set(conversation.messages.filter(role="tool").values_list("metadata__tool_name", flat=True)):
            assert name in html

    assert not failed_checkpoints, f"{len(failed_checkpoints)} of {len(jobs)} checkpoints: {failed_checkpoints[:2]}"


@pytest.mark.django_db
@pytest.mark.parametrize("root_commit", ["5a0c" + "0" * 36, None])
def test_a_windows_repository_is_named_after_its_folder(api, tmp_path, root_commit):
    windows = next(f for f in FOLDERS if "windows" in f.name)
    prompt = next(c for c in hook_calls(windows, tmp_path) if c.event == "UserPromptSubmit")
    body = {**prompt.body, "repository": {**prompt.body["repository"], "root_commit": root_commit}}
    assert api.post("/api/v1/capture/events", body, format="json").status_code == 201
    project = Conversation.objects.get().project
    assert project is not None and project.slug == "shop"


@pytest.mark.django_db
@pytest.mark.parametrize("folder", [f for f in RECORDED if (f / "sessions").exists()], ids=folder_id)
def test_the_saved_session_files_import_once(folder):
    agent = {"claude": "claude", "codex": "codex", "gemini": "gemini", "copilot": "copilot"}[folder.name.split("-")[0]]
    files = agent_transcripts.transcript_files(agent, [str(folder / "sessions")])
    assert files
    out = StringIO()
    call_command("import_agent_transcripts", "--agent", agent, "--no-progress", str(folder / "sessions"),
                 stdout=out, stderr=StringIO())
    assert " 0 malformed" in out.getvalue() and " 0 refused" in out.getvalue(), out.getvalue()
    source = agent_transcripts.TRANSCRIPT_SOURCES[agent]
    imported = Message.objects.filter(conversation__metadata__source=source)
    assert imported.filter(role="user").exists() and imported.filter(role="assistant").exists()
    assert imported.filter(role="tool").exists()
    assert not imported.filter(content__contains=FAKE_SECRET).exists()
    assert imported.filter(role="user", content=LATER_PROMPT).exists()
    # Each session knows its project (Gemini's chats name their folder in .project_root).
    assert not Conversation.objects.filter(metadata__source=source, project__isnull=True).exists()
    again = StringIO()
    call_command("import_agent_transcripts", "--agent", agent, "--no-progress", str(folder / "sessions"),
                 stdout=again, stderr=StringIO())
    assert " 0 message(s) added" in again.getvalue(), again.getvalue()


# --- A hook payload of an unknown newer shape: captured as far as it is understood, the rest kept
# raw, a warning once, never a lost prompt. Built from the recorded Claude Code payloads.

CLAUDE = TRAFFIC / "claude-2.1.197"
NEW_PROMPT = "Where do we round the invoice total?"


def recorded(event: str, **match) -> dict:
    from tests.traffic_corpus import records

    for record in records(CLAUDE):
        payload = record.get("stdin") or {}
        if payload.get("hook_event_name") == event and all(payload.get(k) == v for k, v in match.items()):
            return json.loads(json.dumps(payload))
    raise AssertionError(f"no recorded {event} {match}")


def as_the_hook_posts(api, payload, tmp_path, agent="claude", hint=None):
    """What claude_hook.py main() does with the payload: normalize, then post (recall: true for a
    prompt and a file tool). None when the hook posts nothing."""
    event = agent_dialects.normalize(agent, payload, hint, str(tmp_path / "prompts.json"))
    if event is None:
        return None
    body = {"payload": event, "agent": agent, "repository": {"git_root": "/home/dev/shop"}, "git_branch": "main"}
    if event["hook_event_name"] == "UserPromptSubmit" or event.get("tool_name") in ("Read", "Edit", "Write"):
        body["recall"] = True
    return api.post("/api/v1/capture/events", body, format="json")


def prompt_without(**fields) -> dict:
    payload = recorded("UserPromptSubmit")
    payload.pop("prompt")
    payload.update(fields)
    return payload


NEWER_PROMPTS = {
    "nested-text": prompt_without(prompt={"text": NEW_PROMPT, "attachments": []}),
    "content-blocks": prompt_without(prompt=[{"type": "text", "text": NEW_PROMPT}, {"type": "image", "source": {}}]),
    "renamed-field": prompt_without(user_prompt=NEW_PROMPT),
    "message-structure": prompt_without(message={"role": "user", "content": [{"type": "text", "text": NEW_PROMPT}]}),
}


@pytest.mark.django_db
@pytest.mark.parametrize("shape", NEWER_PROMPTS)
def test_a_prompt_of_a_newer_shape_is_captured_through_the_hook_and_directly(api, tmp_path, shape, caplog,
                                                                           monkeypatch):
    from agents import capture

    monkeypatch.setattr(capture, "_warned", set())
    payload = NEWER_PROMPTS[shape]
    with caplog.at_level("WARNING", logger="winni.capture"):
        hooked = as_the_hook_posts(api, payload, tmp_path)
        # A client that posts the agent's payload as it is (hooks of type http, an older hook).
        direct = api.post("/api/v1/capture/events", {"payload": {**payload, "session_id": "direct-" + shape}},
                          format="json")
    assert hooked.status_code == direct.status_code == 201, (hooked.json(), direct.json())
    assert isinstance(hooked.json()["additional_context"], str)
    stored = Message.objects.filter(role="user").order_by("created_at")
    assert list(stored.values_list("content", flat=True)) == [NEW_PROMPT, NEW_PROMPT]
    assert all(m.metadata.get("prompt_shape") for m in stored)
    # The fields capture does not read are kept raw with the message.
    assert stored[0].metadata["hook_fields"]["prompt_id"] == payload["prompt_id"]
    # One warning per new shape, not one per event.
    warnings = [r for r in caplog.records if "UserPromptSubmit of a shape" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]


@pytest.mark.django_db
def test_a_prompt_without_text_is_kept_raw(api, tmp_path):
    payload = prompt_without(prompt={"image": {"media_type": "image/png", "path": "/home/dev/shop/assets/logo.png"}})
    assert as_the_hook_posts(api, payload, tmp_path).status_code == 201
    message = Message.objects.get(role="user")
    assert json.loads(message.content) == payload["prompt"] and message.metadata["prompt_shape"] == "raw"


@pytest.mark.django_db
def test_unknown_fields_ride_along_raw_and_scrubbed(api, tmp_path):
    prompt = recorded("UserPromptSubmit")
    prompt.update(new_field={"nested": [1, 2]}, huge="y" * 50_000, note=f"token {FAKE_SECRET}")
    assert as_the_hook_posts(api, prompt, tmp_path).status_code == 201
    tool = recorded("PostToolUse", tool_name="Read")
    tool["rate_limit"] = {"remaining": 3}
    assert as_the_hook_posts(api, tool, tmp_path).status_code == 201
    user, read = Message.objects.order_by("turn_number")
    assert user.content == prompt["prompt"]
    fields = user.metadata["hook_fields"]
    assert fields["new_field"] == {"nested": [1, 2]} and fields["permission_mode"] == "default"
    assert len(fields["huge"]) < 2100 and FAKE_SECRET not in json.dumps(user.metadata)
    assert read.metadata["hook_fields"]["rate_limit"] == {"remaining": 3}
    assert read.metadata["hook_fields"]["duration_ms"] == tool["duration_ms"]


@pytest.mark.django_db
def test_an_unknown_event_is_captured_only_when_it_carries_a_prompt(api, tmp_path):
    renamed = recorded("UserPromptSubmit")
    renamed["hook_event_name"] = "UserPromptSubmitted"
    assert as_the_hook_posts(api, renamed, tmp_path).status_code == 201
    message = Message.objects.get()
    assert message.content == renamed["prompt"] and message.metadata["prompt_shape"].endswith("UserPromptSubmitted")
    # Events Claude Code has and Winni does not capture: the hook posts nothing for them.
    for event in ("PostToolBatch", "SubagentStart", "PostCompact", "PreToolUse"):
        assert as_the_hook_posts(api, recorded(event), tmp_path) is None
    notification = {**recorded("Stop"), "hook_event_name": "Notification", "message": "Claude needs your permission"}
    assert as_the_hook_posts(api, notification, tmp_path) is None
    # Copilot's hook names its event (--event): an event that renamed itself is still that event.
    copilot = {"hook_event_name": "UserPromptSubmitted2", "session_id": "c1", "cwd": "/home/dev/shop",
               "text": NEW_PROMPT}
    assert as_the_hook_posts(api, copilot, tmp_path, agent="copilot", hint="UserPromptSubmit").status_code == 201
    assert Message.objects.filter(content=NEW_PROMPT).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("tool_input", [
    "/home/dev/shop/src/invoice.py",
    ["/home/dev/shop/src/invoice.py", "/home/dev/shop/src/billing/tax.py"],
    {"target": {"path": "/home/dev/shop/src/invoice.py"}, "range": [1, 5]},
    {"file_path": "/home/dev/shop/src/invoice.py", "offset": {"line": 1}},
    None,
])
def test_a_tool_input_of_a_newer_shape_is_stored_and_recall_answers(api, tmp_path, tool_input):
    tool = recorded("PostToolUse", tool_name="Read")
    tool["tool_input"] = tool_input
    response = as_the_hook_posts(api, tool, tmp_path)
    assert response.status_code == 201 and isinstance(response.json()["additional_context"], str)
    assert json.loads(Message.objects.get().content)["tool_input"] == tool_input


@pytest.mark.live
def test_the_hook_program_keeps_a_prompt_of_a_newer_shape(winni_server, live_token, tmp_path):
    import subprocess
    import sys

    from agents.management.commands.install_claude_hooks import HOOK_SCRIPT

    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WINNI_URL": winni_server.url, "WINNI_TOKEN": live_token,
           "WINNI_HOOK_SPOOL": str(tmp_path / "spool.jsonl"), "WINNI_HOOK_LOG": str(tmp_path / "hook.log")}
    payload = {**NEWER_PROMPTS["message-structure"], "session_id": "newer-shape-hook"}
    done = subprocess.run([sys.executable, "-I", "-S", str(HOOK_SCRIPT)], input=json.dumps(payload), env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    assert not (tmp_path / "spool.jsonl").exists() or not (tmp_path / "spool.jsonl").read_text().strip()
    message = Message.objects.get(conversation__session_id="newer-shape-hook")
    assert message.content == NEW_PROMPT and message.metadata["prompt_shape"] == "message"
