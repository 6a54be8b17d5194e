"""A real day, end to end (issue #43): the real Claude Code CLI against the fake model, Winni's hooks
installed by the installer, Winni restarted between two sessions. Session 1 writes a file by its
absolute path (as Claude Code sends every path) and states a decision; its end leaves a medallion
for the project; after the restart, the *first* prompt of session 2 on the same subject reaches the
model with the decision, and the admin's "Winni added" note is exactly what the model received."""
from __future__ import annotations

import html
import json
import subprocess
import uuid
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from agents.models import Injection
from conversations.admin import transcript_url
from conversations.models import Conversation
from medallions.models import Medallion, MedallionJob
from tests.claude_cli import claude_env, run_claude
from tests.fake_anthropic import USE_TOOL, FakeAnthropic
from tests.support import LiveServer

pytestmark = [pytest.mark.live, pytest.mark.slow]

DECISION = "Decision: store every money amount in the shop as integer cents, never as floats."
MONEY_PY = "def to_cents(amount):\n    return int(round(amount * 100))\n"


def _texts(request: dict[str, Any]) -> str:
    """Every text the model was given in one request (system-reminders included), as it read it."""
    out = []
    for message in request["messages"]:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        out += [block.get("text", "") for block in blocks if block.get("type") == "text"]
    return "\n".join(out)


def test_session_two_starts_with_what_session_one_decided_after_a_restart(live_server_env, live_token, tmp_path,
                                                                          monkeypatch):
    home, project = tmp_path / "home", tmp_path / "shop"
    (home / ".claude").mkdir(parents=True)
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    target = project / "src" / "money.py"
    server = LiveServer(live_server_env)
    fake = FakeAnthropic(tool_name="Write", tool_input={"file_path": str(target), "content": MONEY_PY})
    try:
        monkeypatch.setenv("HOME", str(home))
        call_command("install_agent_hooks", "--agent", "claude", "--url", server.url, "--token", live_token)
        env = claude_env(home, fake.url)
        first = str(uuid.uuid4())
        run_claude(["-p", "--session-id", first, "--allowedTools=Write",
                    f"{USE_TOOL} {DECISION} Put the conversion in src/money.py."], cwd=project, env=env)
        assert target.read_text() == MONEY_PY  # Claude Code wrote it, by its absolute path

        # Its end (SessionEnd of `claude -p`) checkpointed the project: done, with project-relative names.
        job = MedallionJob.objects.get(tags=["repo:shop"])
        assert job.status == "done", job.error
        medallion = Medallion.objects.get(tags=["repo:shop"])
        names = [subsystem["name"] for subsystem in medallion.summary["subsystems"]]
        assert names == ["src"], names
        assert "integer cents" in json.dumps(medallion.decisions)

        # Winni restarts; the first prompt after it is the one that matters.
        port = server.port
        server.stop()
        server = LiveServer(live_server_env, port=port)
        second = str(uuid.uuid4())
        question = "How should money amounts be stored in the shop?"
        run_claude(["-p", "--session-id", second, question], cwd=project, env=env)
    finally:
        fake.stop()
        server.stop()

    asked = [r for r in fake.main_requests() if question in json.dumps(r["messages"])][0]
    seen = _texts(asked)
    assert "integer cents" in seen
    injection = Injection.objects.get(session_id=second, trigger="prompt")
    assert injection.delivered and "integer cents" in injection.text
    assert injection.text in seen  # what Winni recorded is what the model read, to the character

    # The admin's note is that block, marked delivered.
    staff = get_user_model().objects.create_superuser("day", "day@example.com", "pw-day-123")
    browser = Client()
    browser.force_login(staff)
    conversation = Conversation.objects.get(session_id=second, metadata__source="claude-code")
    page = browser.get(transcript_url(conversation.pk)).content.decode()
    count = len(injection.item_keys)
    assert f"Winni added {count} item{'s' if count != 1 else ''} ({len(injection.text)} characters)" in page
    assert html.escape(injection.text) in page and "winni-undelivered" not in page
