"""Capture failures show: the hook program warns (SessionStart always, a prompt at most once an
hour) while events wait in its spool or its sends fail; the dashboard shows each project's last
captured event and today's count; /healthz counts the events."""
from __future__ import annotations

import json
import time

import pytest
from django.utils import timezone

from agents import capture
from conversations.models import Message
from core import projects
from tests.agents.test_capture_hooks import event, run_hook
from tests.support import free_port


@pytest.fixture
def hook_env(tmp_path):
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WINNI_HOOK_SPOOL": str(tmp_path / "spool.jsonl"),
            "WINNI_HOOK_LOG": str(tmp_path / "hook.log"), "WINNI_HOOK_TIMEOUT": "2", "TZ": "UTC"}


def spooled(env):
    return [json.loads(line) for line in open(env["WINNI_HOOK_SPOOL"])]


def added(result) -> str:
    """What a prompt's hook added to the model's context (its hookSpecificOutput), "" for nothing."""
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"] if result.stdout else ""


def test_a_prompt_warns_once_an_hour_and_session_start_always_while_winni_is_down(hook_env, tmp_path):
    down = {**hook_env, "WINNI_URL": f"http://127.0.0.1:{free_port()}", "WINNI_TOKEN": "winni_x"}
    first = run_hook(event("UserPromptSubmit", prompt="one"), env=down)
    since = spooled(down)[0]["captured_at"][11:16]  # HH:MM of the oldest waiting event (TZ=UTC)
    assert added(first).startswith(f"Winni: not running (connection refused); 1 event waiting since {since}")
    second = run_hook(event("UserPromptSubmit", prompt="two"), env=down)
    assert second.stdout == ""  # not again within the hour
    start = run_hook(event("SessionStart", source="startup"), env=down)
    assert start.stdout.splitlines()[0].startswith(f"Winni: not running (connection refused); 2 events waiting since {since}")
    # An hour later, a prompt warns again.
    status_file = tmp_path / "claude-hook-status.json"
    status = json.loads(status_file.read_text())
    status_file.write_text(json.dumps({**status, "warned_at": time.time() - 3601}))
    assert added(run_hook(event("UserPromptSubmit", prompt="three"), env=down)).startswith(
        "Winni: not running (connection refused); 3 events waiting")


@pytest.mark.live
def test_a_refused_token_is_named_and_the_warning_goes_once_the_events_are_sent(winni_server, live_token, hook_env):
    wrong = {**hook_env, "WINNI_URL": winni_server.url, "WINNI_TOKEN": "winni_wrong"}
    refused = run_hook(event("UserPromptSubmit", prompt="kept"), env=wrong)
    assert "token refused (HTTP 401)" in added(refused)
    up = {**hook_env, "WINNI_URL": winni_server.url, "WINNI_TOKEN": live_token}
    start = run_hook(event("SessionStart", source="startup"), env=up)
    assert "Winni:" not in start.stdout  # the spooled event went first: nothing waits, nothing failed
    assert list(Message.objects.values_list("content", flat=True)) == ["kept"]
    assert run_hook(event("UserPromptSubmit", prompt="fine"), env=up).stdout == ""


@pytest.mark.django_db
class TestServer:
    def test_capture_activity_per_project_and_health(self, api):
        alpha = projects.project_create(name="alpha")
        for prompt in ("a", "b"):
            capture.capture_hook_event(payload={"session_id": "s1", "cwd": "/w/a", "hook_event_name": "UserPromptSubmit",
                                                "prompt": prompt}, project="alpha")
        old = capture.capture_hook_event(payload={"session_id": "s2", "cwd": "/w/b", "hook_event_name": "UserPromptSubmit",
                                                  "prompt": "yesterday"}, captured_at="2020-01-01T10:00:00Z")
        api.post("/api/v1/conversations/", {}, format="json")  # not captured: not counted
        activity = capture.capture_activity()
        assert activity[alpha.pk]["events_today"] == 2
        other = Message.objects.get(pk=old.message_id).conversation.project_id
        assert activity[other]["events_today"] == 0  # captured at a past time: not today's
        assert (timezone.now() - activity[other]["last_event_at"]).total_seconds() < 60  # but it just arrived
        health = api.get("/healthz").json()["capture"]
        assert health["status"] == "ok" and health["events_today"] == 2 and health["projects_today"] == 1
        assert health["last_event_seconds_ago"] < 60

    def test_the_dashboard_shows_each_projects_last_event_and_todays_count(self, client, staff_user):
        projects.project_create(name="alpha")
        capture.capture_hook_event(payload={"session_id": "s1", "cwd": "/w/a", "hook_event_name": "UserPromptSubmit",
                                            "prompt": "x"}, project="alpha")
        client.force_login(staff_user)
        page = client.get("/admin/").content.decode()
        assert 'id="winni-capture"' in page and 'data-project="alpha"' in page
        row = page.split('data-project="alpha"')[1].split("</tr>")[0]
        assert 'data-today="1"' in row and timezone.now().strftime("%Y-%m-%d") in row


@pytest.mark.django_db
def test_a_failed_checkpoint_shows_on_healthz_the_dashboard_and_once_at_the_next_start(
        api, admin_client, settings, django_capture_on_commit_callbacks):
    from tests.agents.test_capture_hooks import post

    # A model that cannot be reached: the session's checkpoint fails in the worker.
    settings.WINNI_MEDALLION_LLM_PROVIDER = "openai"
    settings.WINNI_MEDALLION_LLM_BASE_URL = f"http://127.0.0.1:{free_port()}"
    settings.WINNI_MEDALLION_LLM_MODEL = "absent-model"
    projects.project_create(name="alpha")
    assert api.get("/healthz").json()["capture"]["status"] == "ok"
    with django_capture_on_commit_callbacks(execute=True):
        post(api, event("UserPromptSubmit", prompt="Decision: money is integer cents."), project="alpha")
        ended = post(api, event("SessionEnd", reason="prompt_input_exit"), project="alpha").json()
    assert ended["checkpoint_job_id"]
    health = api.get("/healthz").json()["capture"]
    assert (health["status"], health["failed_checkpoints"]) == ("failing", 1)
    failure = health["last_failure"]
    assert (failure["job_id"], failure["project"]) == (ended["checkpoint_job_id"], "alpha") and failure["error"]
    html = admin_client.get("/admin/").content.decode()
    assert 'id="winni-capture-failures"' in html and "1 checkpoint failed in the last 7 days" in html
    assert failure["error"][:40] in html
    first = capture.session_start_text(project="alpha")
    assert first.startswith("Winni: the checkpoint of alpha at ") and f"failed: {failure['error'][:40]}" in first
    assert "Winni: the checkpoint" not in capture.session_start_text(project="alpha")  # told once
    assert api.get("/healthz").json()["capture"]["failed_checkpoints"] == 1  # still shown for a day
