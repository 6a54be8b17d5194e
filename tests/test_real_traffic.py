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
from winni_site import agent_dialects, agent_transcripts

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
    for conversation in Conversation.objects.filter(metadata__source=source):
        turns = list(conversation.messages.order_by("turn_number").values_list("turn_number", flat=True))
        assert turns == list(range(1, len(turns) + 1))
        assert conversation.project is not None and conversation.project.slug == "shop"

    # Scrubbing: the token planted in a prompt (and in a command's output) is stored nowhere.
    assert any(FAKE_SECRET in json.dumps(c.body) for c, _, _ in answered), "the recording lost the planted token"
    assert not Message.objects.filter(content__contains=FAKE_SECRET).exists()
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
    again = StringIO()
    call_command("import_agent_transcripts", "--agent", agent, "--no-progress", str(folder / "sessions"),
                 stdout=again, stderr=StringIO())
    assert " 0 message(s) added" in again.getvalue(), again.getvalue()
