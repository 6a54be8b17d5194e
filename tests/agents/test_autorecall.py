"""Automatic recall's service (agents.autorecall.context_for_prompt) and its interfaces: MCP
winni_context through the real streamable-HTTP transport and REST POST /api/v1/recall/context."""
import re
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from agents import autorecall, capture
from agents.models import Injection
from conversations import services as conversations
from conversations.models import SessionDigest
from core import projects
from medallions import services as medallions
from memory import services as memories
from tests.medallion_support import document
from tests.support import McpClient

DRIVER = ("We decided to use psycopg 3 as the database driver instead of asyncpg, because Django's "
          "ORM supports it natively and the connection pool is built in.")


def seed(*, other_project: bool = True) -> dict[str, Any]:
    """A project "shop" whose first session settled the database driver, a medallion holding that
    decision, a memory; and another project that talks about something else."""
    shop = projects.project_create(name="shop", path="/work/shop")
    first = conversations.conversation_begin(session_id="session-one", project=shop)
    for role, text in (("user", "Which PostgreSQL driver should the shop use, psycopg or asyncpg?"),
                       ("assistant", DRIVER),
                       ("user", "run the tests"),
                       ("assistant", "All 212 tests passed."),
                       ("assistant", "The PDF layout lives in shop/billing/invoices.py; keep WeasyPrint there.")):
        conversations.message_store(conversation_id=first.id, role=role, content=text)
    memory = memories.memory_store(content="The shop's invoices are rendered with WeasyPrint to PDF.",
                                   project="shop")[0]
    medallion = medallions.medallion_create(document=document(
        scope={"graph_nodes": [], "tags": ["repo:shop"]},
        decisions=[{"id": "D-7", "statement": "Use psycopg 3 as the PostgreSQL database driver",
                    "rationale": "native Django support and a built-in pool", "confidence": 0.9,
                    "status": "active"}],
        open_questions=[{"id": "Q-2", "question": "Should invoices be archived to S3?", "blocked_on": "",
                         "priority": "low"}],
        affordances={"recommended_entry_points": [], "avoid_repeating": [],
                     "invariants": ["Never store card numbers in the database"]}))
    if other_project:
        garden = projects.project_create(name="garden")
        talk = conversations.conversation_begin(session_id="garden-one", project=garden)
        conversations.message_store(conversation_id=talk.id, role="user",
                                    content="The tomatoes need watering every morning in July.")
    return {"shop": shop, "first": first, "memory": memory, "medallion": medallion}


@pytest.fixture
def shop(db: Any, django_capture_on_commit_callbacks: Any) -> dict[str, Any]:
    with django_capture_on_commit_callbacks(execute=True):
        return seed()


def test_a_related_prompt_brings_back_the_decision_with_its_source(shop):
    out = autorecall.context_for_prompt(prompt="Which PostgreSQL database driver do we use, psycopg 3?",
                                        project="shop", session_id="session-two")
    assert out["gate"]["injected"] is True
    assert out["text"].startswith(autorecall.HEADER)
    assert "psycopg 3" in out["text"]
    kinds = {item["kind"] for item in out["items"]}
    assert "decision" in kinds and "message" in kinds
    decision = next(item for item in out["items"] if item["kind"] == "decision")
    assert decision["source"]["medallion_id"] == str(shop["medallion"].id)
    assert decision["id"] == f"{shop['medallion'].id}:D-7"
    message = next(item for item in out["items"] if item["kind"] == "message")
    assert message["source"]["session_id"] == "session-one" and message["source"]["turn"] in (1, 2)
    assert message["source"]["conversation_id"] == str(shop["first"].id)
    source = message["source"]
    # The block names the conversation by the start of its id, which dewey_get_conversation reads back.
    ref = source["conversation_id"][:8]
    assert f"turn {source['turn']} ({source['role']}) · conversation {ref}]" in out["text"]
    assert str(conversations.conversation_get(conversation_id=ref)[0].id) == source["conversation_id"]
    assert "tomatoes" not in out["text"]  # another project's turns stay out


@pytest.mark.parametrize("prompt", ["run the tests", "thanks", "continue", "commit this", "fix the lint errors"])
def test_generic_prompts_get_nothing(shop, prompt):
    out = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-two")
    assert out == {"text": "", "items": [], "gate": out["gate"], "time_filter": None} and out["gate"]["injected"] is False
    assert not Injection.objects.exists()


def test_a_how_to_question_of_generic_words_gets_the_rule_the_project_stated(shop, django_capture_on_commit_callbacks):
    """"How do I run the tests here?" is made of generic words, like the instruction "run the tests",
    but asks what this project does: a rule stated in an earlier session answers it; a turn that
    only ran them does not, and the instruction itself still gets nothing."""
    question = "How do I run the tests here?"
    out = autorecall.context_for_prompt(prompt=question, project="shop", session_id="session-two")
    assert out["items"] == [] and out["gate"]["reason"] == "no stated rule answers this how-to question"
    with django_capture_on_commit_callbacks(execute=True):
        rules = conversations.conversation_begin(session_id="session-rules", project=shop["shop"])
        conversations.message_store(conversation_id=rules.id, role="user", content=(
            "Rule: run the tests with `python -m pytest -q` from the repo root, never with tox."))
    out = autorecall.context_for_prompt(prompt=question, project="shop", session_id="session-three")
    assert out["gate"]["injected"] is True and out["gate"]["procedure"] is True
    assert out["items"][0]["kind"] == "message" and "python -m pytest -q" in out["text"]
    assert "All 212 tests passed" not in out["text"]
    assert autorecall.context_for_prompt(prompt="run the tests", project="shop", session_id="session-four")["items"] == []


def test_a_question_the_store_cannot_answer_gets_nothing(shop):
    out = autorecall.context_for_prompt(prompt="When do the tomatoes need watering?", project="shop",
                                        session_id="session-two")
    assert out["text"] == "" and out["items"] == []


def test_the_session_own_turns_are_left_out(shop):
    out = autorecall.context_for_prompt(prompt="Which database driver do we use for PostgreSQL?",
                                        project="shop", session_id="session-one")
    assert all(item["source"].get("session_id") != "session-one" for item in out["items"])
    assert all(item["kind"] != "message" for item in out["items"])


def test_empty_prompt_and_bad_max_chars(shop):
    for prompt in ("", "   \n", None):
        assert autorecall.context_for_prompt(prompt=prompt)["text"] == ""
    for bad in (199, 50_001, "4000", True):
        with pytest.raises(autorecall.InvalidInput) as caught:
            autorecall.context_for_prompt(prompt="psycopg driver", max_chars=bad)
        assert caught.value.field == "max_chars" and "max_chars" in caught.value.message


def test_the_budget_bounds_the_block(shop):
    small = autorecall.context_for_prompt(prompt="Which database driver do we use for PostgreSQL?",
                                          project="shop", max_chars=400)
    assert 0 < len(small["text"]) <= 400
    large = autorecall.context_for_prompt(prompt="Which database driver do we use for PostgreSQL?",
                                          project="shop", max_chars=20_000)
    assert len(large["items"]) >= len(small["items"])


def test_unknown_project_and_session_answer_from_the_whole_store(shop):
    out = autorecall.context_for_prompt(prompt="When do the tomatoes need watering?", project="no-such-project",
                                        session_id="never-seen")
    assert out["gate"]["injected"] is True and "tomatoes" in out["text"]


def test_an_item_is_injected_once_per_session_until_compaction(shop):
    prompt = "Which database driver do we use for PostgreSQL?"
    first = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-two")
    assert first["items"]
    again = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-two")
    assert not {(i["kind"], i["id"]) for i in again["items"]} & {(i["kind"], i["id"]) for i in first["items"]}
    assert again["gate"]["repeated"] >= len(first["items"])
    other = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-three")
    assert [i["id"] for i in other["items"]] == [i["id"] for i in first["items"]]
    capture.capture_hook_event(payload={"hook_event_name": "SessionStart", "session_id": "session-two",
                                        "source": "compact"})
    after = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-two")
    assert [i["id"] for i in after["items"]] == [i["id"] for i in first["items"]]
    assert Injection.objects.filter(session_id="session-two", reset_at__isnull=False).count() == 1


def test_a_repeated_question_brings_the_cached_answer(shop):
    from memory.librarian.services.entries import librarian_remember

    librarian_remember(query="How are invoices rendered?", answer="With WeasyPrint, to PDF.", project="shop")
    out = autorecall.context_for_prompt(prompt="how are  invoices rendered?", project="shop")
    assert out["items"][0]["kind"] == "answer" and "With WeasyPrint, to PDF." in out["text"]


# --- interfaces --------------------------------------------------------------------------------


@pytest.fixture
def live_shop(transactional_db: Any) -> dict[str, Any]:
    return seed()


def test_winni_context_through_mcp(live_shop, mcp: McpClient):
    prompt = "Which database driver do we use for PostgreSQL?"
    out = mcp.call("winni_context", {"prompt": prompt, "project": "shop", "session_id": "mcp-session"})
    assert "psycopg 3" in out["text"] and out["items"]
    assert {"kind", "id", "score", "source"} <= set(out["items"][0])
    assert "tomatoes" not in out["text"]  # the project filter: another project's turns stay out
    again = mcp.call("winni_context", {"prompt": prompt, "project": "shop", "session_id": "mcp-session"})
    assert not {i["id"] for i in again["items"]} & {i["id"] for i in out["items"]}
    capture.capture_hook_event(payload={"hook_event_name": "SessionStart", "session_id": "mcp-session",
                                        "source": "clear"})
    after = mcp.call("winni_context", {"prompt": prompt, "project": "shop", "session_id": "mcp-session"})
    assert [i["id"] for i in after["items"]] == [i["id"] for i in out["items"]]
    garden = mcp.call("winni_context", {"prompt": "When do the tomatoes need watering?", "project": "garden"})
    assert "tomatoes" in garden["text"] and "psycopg" not in garden["text"]
    assert mcp.call("winni_context", {"prompt": "run the tests", "project": "shop"})["text"] == ""
    assert mcp.call("winni_context", {"prompt": "  "})["items"] == []
    small = mcp.call("winni_context", {"prompt": prompt, "project": "shop", "max_chars": 300})
    assert len(small["text"]) <= 300
    error = mcp.call_error("winni_context", {"prompt": prompt, "max_chars": 100})
    assert "max_chars" in error and "200" in error


def test_each_item_names_its_source_short_and_the_reads_take_that_name(live_shop, mcp_legacy: McpClient):
    """A turn's conversation, a medallion item's medallion and a memory are named by the first 8
    hex digits of their id (core.shortref), which dewey_get_conversation and winni_get read back
    through the real MCP transport."""
    named, text = {}, ""
    for prompt in ("Which PostgreSQL database driver do we use, psycopg 3?", "How are the shop's invoices rendered to PDF?"):
        out = mcp_legacy.call("winni_context", {"prompt": prompt, "project": "shop"})
        named.update({item["kind"]: item["source"]["ref"] for item in out["items"] if item["source"].get("ref")})
        text += out["text"]
    assert {"message", "decision", "memory"} <= set(named), text
    assert all(len(ref) == 8 and f" {ref}]" in text for ref in named.values())
    assert named["memory"] == str(live_shop["memory"].id)[:8] and str(live_shop["memory"].id) not in text
    assert named["decision"] == str(live_shop["medallion"].id)[:8]
    assert mcp_legacy.call("winni_get", {"kind": "memory", "id": named["memory"]})["text"].startswith("The shop's invoices")
    assert mcp_legacy.call("winni_get", {"kind": "medallion", "id": named["decision"]})["label"]
    conversation = mcp_legacy.call("dewey_get_conversation", {"conversation_id": named["message"]})
    assert conversation["conversation_id"] == str(live_shop["first"].id)
    assert "whole id" not in mcp_legacy.call_error("winni_get", {"kind": "memory", "id": "0000000z"})


def test_winni_context_over_the_content_limit_through_mcp(live_shop, mcp_legacy: McpClient, settings):
    from django.conf import settings as django_settings

    too_big = "x" * (django_settings.WINNI_MAX_CONTENT_BYTES + 1)
    error = mcp_legacy.call_error("winni_context", {"prompt": too_big})
    assert "prompt" in error and "WINNI_MAX_CONTENT_BYTES" in error


def test_recall_context_over_rest(shop, api, settings):
    url = "/api/v1/recall/context"
    prompt = "Which database driver do we use for PostgreSQL?"
    response = api.post(url, {"prompt": prompt, "project": "shop", "session_id": "rest-session"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert "psycopg 3" in body["text"] and body["gate"]["injected"] is True
    again = api.post(url, {"prompt": prompt, "project": "shop", "session_id": "rest-session"}, format="json").json()
    assert not {i["id"] for i in again["items"]} & {i["id"] for i in body["items"]}
    # A compaction (SessionStart source compact, as the hook sends it) resets the session's record.
    api.post("/api/v1/capture/events", {"payload": {"hook_event_name": "SessionStart", "session_id": "rest-session",
                                                    "source": "compact"}}, format="json")
    after = api.post(url, {"prompt": prompt, "project": "shop", "session_id": "rest-session"}, format="json").json()
    assert [i["id"] for i in after["items"]] == [i["id"] for i in body["items"]]
    empty = api.post(url, {"prompt": ""}, format="json").json()
    assert empty["text"] == "" and empty["items"] == []
    bad = api.post(url, {"prompt": prompt, "max_chars": 60_000}, format="json")
    assert bad.status_code == 400 and "max_chars" in bad.content.decode()
    settings.WINNI_MAX_CONTENT_BYTES = 100
    big = api.post(url, {"prompt": "psycopg " * 30}, format="json")
    assert big.status_code == 413 and "prompt" in big.content.decode()
    paths = api.get("/api/schema/?format=json").json()["paths"]
    assert "/api/v1/recall/context" in paths and "/api/v1/capture/hook" in paths


# --- delivery to Claude Code: the capture request answers the block -------------------------------


def hook_event(name: str, session_id: str = "session-two", **fields: Any) -> dict[str, Any]:
    return {"session_id": session_id, "cwd": "/work/shop", "hook_event_name": name, **fields}


def test_the_capture_request_answers_the_prompts_block(shop, api):
    prompt = hook_event("UserPromptSubmit", prompt="Which database driver do we use for PostgreSQL?")
    answer = api.post("/api/v1/capture/events", {"payload": prompt, "project": "shop", "recall": True}, format="json")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert "psycopg 3" in body["additional_context"]
    injection = Injection.objects.get(session_id="session-two")
    assert str(injection.message_id) == body["message_id"] and injection.trigger == "prompt"
    assert injection.project == shop["shop"] and injection.text == body["additional_context"]
    plain = api.post("/api/v1/capture/events", {"payload": hook_event("UserPromptSubmit", prompt="run the tests"),
                                                "project": "shop", "recall": True}, format="json").json()
    assert plain["additional_context"] == ""
    without = api.post("/api/v1/capture/events", {"payload": prompt, "project": "shop"}, format="json").json()
    assert "additional_context" not in without


def test_recall_can_be_turned_off_globally_and_per_project(shop, api, settings):
    prompt = {"payload": hook_event("UserPromptSubmit", prompt="Which database driver do we use for PostgreSQL?"),
              "project": "shop", "recall": True}
    settings.WINNI_RECALL_INJECT = False
    assert api.post("/api/v1/capture/events", prompt, format="json").json()["additional_context"] == ""
    settings.WINNI_RECALL_INJECT = True
    call_command("winni_project", "recall", "shop", "off")
    assert api.post("/api/v1/capture/events", prompt, format="json").json()["additional_context"] == ""
    assert not Injection.objects.exists()
    # The tool still answers when asked.
    assert autorecall.context_for_prompt(prompt=prompt["payload"]["prompt"], project="shop")["items"]
    call_command("winni_project", "recall", "shop", "on")
    assert "psycopg 3" in api.post("/api/v1/capture/events", prompt, format="json").json()["additional_context"]
    with pytest.raises(CommandError, match="project"):
        call_command("winni_project", "recall", "nope", "off")


def test_install_claude_hooks_http(tmp_path, monkeypatch, db):
    import json

    monkeypatch.setenv("HOME", str(tmp_path))
    call_command("install_claude_hooks", "--hook-type", "http", "--token", "winni_secret", "--url", "http://h:1")
    written = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    hook = written["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert hook == {"type": "http", "url": "http://h:1/api/v1/capture/hook", "timeout": 10,
                    "headers": {"Authorization": "Bearer winni_secret"}}
    assert written["hooks"]["PostToolUse"][0]["matcher"] == "*"
    # Back to command hooks: the http entries are replaced, not kept beside them.
    call_command("install_claude_hooks", "--token", "winni_secret", "--url", "http://h:1")
    again = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert [h["type"] for e in again["hooks"]["UserPromptSubmit"] for h in e["hooks"]] == ["command"]
    project = tmp_path / "repo"
    project.mkdir()
    call_command("install_claude_hooks", "--hook-type", "http", "--project", str(project), "--token", "winni_secret")
    shared = json.loads((project / ".claude" / "settings.json").read_text())
    hook = shared["hooks"]["Stop"][0]["hooks"][0]
    assert hook["headers"] == {"Authorization": "Bearer $WINNI_TOKEN"} and hook["allowedEnvVars"] == ["WINNI_TOKEN"]
    assert "winni_secret" not in (project / ".claude" / "settings.json").read_text()


def test_a_prompt_over_the_size_limit_injects_nothing(shop, api, settings):
    settings.WINNI_MAX_CONTENT_BYTES = 50
    answer = api.post("/api/v1/capture/events", {"payload": hook_event("UserPromptSubmit", prompt="psycopg " * 20),
                                                 "project": "shop", "recall": True}, format="json")
    assert answer.status_code == 413 and not Injection.objects.exists()


def test_the_http_hook_endpoint(shop, api):
    """What a Claude Code hook of type http posts (the hook input itself) and reads back."""
    from contexts import services as contexts

    contexts.context_set(name="rules", content="SHOP RULES", actor="t")
    start = api.post("/api/v1/capture/hook", hook_event("SessionStart", source="startup"), format="json")
    assert start.status_code == 200
    assert "SHOP RULES" in start.json()["hookSpecificOutput"]["additionalContext"]
    prompt = hook_event("UserPromptSubmit", prompt="Which database driver do we use for PostgreSQL?")
    answer = api.post("/api/v1/capture/hook", prompt, format="json").json()
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "psycopg 3" in answer["hookSpecificOutput"]["additionalContext"]
    assert api.post("/api/v1/capture/hook", hook_event("UserPromptSubmit", prompt="thanks"), format="json").json() == {}
    assert api.post("/api/v1/capture/hook", hook_event("Stop", last_assistant_message="ok"), format="json").json() == {}
    compact = api.post("/api/v1/capture/hook", hook_event("SessionStart", source="compact"), format="json")
    assert compact.status_code == 200
    assert Injection.objects.filter(session_id="session-two", reset_at__isnull=False).count() == 1
    bad = api.post("/api/v1/capture/hook", {"hook_event_name": "UserPromptSubmit"}, format="json")
    assert bad.status_code == 400 and "session_id" in bad.content.decode()


def test_a_prompt_the_gate_keeps_nothing_of_is_not_searched(shop, monkeypatch):
    searched = []
    search = autorecall.rank
    monkeypatch.setattr(autorecall, "rank", lambda **kwargs: searched.append(kwargs["query"]) or search(**kwargs))
    reasons = set()
    for prompt in ("run the tests", "fix the lint errors", "perfect", "bump the npm package version"):
        out = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="session-two")
        assert out["text"] == ""
        reasons.add(out["gate"]["reason"])
    assert "a generic instruction" in reasons, reasons
    assert searched == []
    assert autorecall.context_for_prompt(prompt="Which database driver do we use for PostgreSQL?", project="shop",
                                         session_id="session-two")["text"]
    assert searched == ["Which database driver do we use for PostgreSQL?"]
    # The gate's calibration (no gate given) still searches every prompt.
    autorecall.candidates_for("bump the npm package version", projects.project_find("shop"),
                              "session-two")
    assert searched[-1] == "bump the npm package version"


def test_a_prompt_is_stored_while_it_is_recalled(live_shop, monkeypatch):
    """Outside a transaction the prompt's capture runs in a helper thread while it is recalled: the
    same block as capture-then-recall, its injection linked to the stored prompt."""
    import threading

    from conversations.models import Message

    stored_by = []
    capture_event = capture.capture_hook_event

    def recording(**kwargs: Any) -> capture.CaptureResult:
        stored_by.append(threading.current_thread().name)
        return capture_event(**kwargs)

    monkeypatch.setattr(capture, "capture_hook_event", recording)
    question = "Which database driver do we use for PostgreSQL?"
    expected = autorecall.context_for_prompt(prompt=question, project="shop", session_id="session-two", record=False)
    result, text = capture.capture_with_recall(payload=hook_event("UserPromptSubmit", prompt=question))
    assert stored_by and stored_by[0].startswith("winni-recall")  # memory.retrieval's helpers
    assert result.stored and "psycopg 3" in text and text == expected["text"]
    assert Message.objects.get(id=result.message_id).content == question
    injection = Injection.objects.get(session_id="session-two")
    assert str(injection.message_id) == result.message_id and injection.text == text
    # A prompt that gets nothing is stored all the same.
    result, text = capture.capture_with_recall(payload=hook_event("UserPromptSubmit", prompt="run the tests"))
    assert result.stored and text == "" and Injection.objects.count() == 1


def test_a_prompt_whose_project_the_capture_changes_is_recalled_for_the_capture(live_shop, monkeypatch):
    """Recalled for the project the prompt was stored in, when the one known beforehand was not it."""
    garden = projects.project_find("garden")
    monkeypatch.setattr(capture, "_prompt_project", lambda payload, event: garden)
    result, text = capture.capture_with_recall(
        payload=hook_event("UserPromptSubmit", prompt="Which database driver do we use for PostgreSQL?"))
    assert result.project_id == live_shop["shop"].pk and "psycopg 3" in text
    assert Injection.objects.get().project_id == live_shop["shop"].pk


# --- the hook program ---------------------------------------------------------------------------


def run_hook(payload: dict[str, Any], env: dict[str, str]) -> Any:
    import json
    import subprocess
    import sys

    from agents.management.commands.install_claude_hooks import HOOK_SCRIPT

    return subprocess.run([sys.executable, "-I", "-S", str(HOOK_SCRIPT)], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=30)


@pytest.fixture
def hook_env(tmp_path: Any) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WINNI_HOOK_SPOOL": str(tmp_path / "spool.jsonl"),
            "WINNI_HOOK_LOG": str(tmp_path / "hook.log"), "WINNI_HOOK_TIMEOUT": "2"}


@pytest.mark.live
def test_the_hook_program_prints_the_block_for_claude_code(live_shop, winni_server, live_token, hook_env):
    import json

    env = {**hook_env, "WINNI_URL": winni_server.url, "WINNI_TOKEN": live_token}
    # cwd /work/shop is not on this machine: its folder name finds the project "shop".
    prompt = hook_event("UserPromptSubmit", prompt="Which database driver do we use for PostgreSQL?")
    result = run_hook(prompt, env)
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit" and "psycopg 3" in output["additionalContext"]
    quiet = run_hook(hook_event("UserPromptSubmit", prompt="run the tests"), env)
    assert (quiet.returncode, quiet.stdout) == (0, "")


def test_a_silent_winni_never_holds_the_prompt_and_only_a_repeated_slowness_is_said(hook_env, tmp_path):
    """Winni accepts the connection and never answers: past WINNI_HOOK_TIMEOUT the hook goes on
    without a block and keeps the prompt to send again, marked as a recall that never arrived.
    Slow is not down: the model hears nothing of a single slow answer, and is told when it repeats."""
    import json
    import socket
    import time

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(5)
        env = {**hook_env, "WINNI_URL": f"http://127.0.0.1:{server.getsockname()[1]}", "WINNI_HOOK_TIMEOUT": "0.5"}
        began = time.monotonic()
        first = run_hook(hook_event("UserPromptSubmit", prompt="Which database driver do we use?"), env)
        took = time.monotonic() - began
        second = run_hook(hook_event("UserPromptSubmit", prompt="And which pool size?"), env)
    assert (first.returncode, first.stdout) == (0, "")
    assert took < 3, took
    added = json.loads(second.stdout)["hookSpecificOutput"]["additionalContext"]
    # The second prompt went with the first in one batch (a backlog is given up to 4 timeouts).
    assert re.fullmatch(r"Winni was slow \(\d+\.\d s\); no recall for this prompt", added), added
    spooled = [json.loads(line) for line in open(hook_env["WINNI_HOOK_SPOOL"])]
    assert [event["payload"]["prompt"] for event in spooled] == ["Which database driver do we use?",
                                                                  "And which pool size?"]
    assert all(event["recall_undelivered"].startswith("the hook gave up waiting after ") for event in spooled)
    assert not any("recall" in event for event in spooled)


def test_touching_a_file_brings_back_what_names_it_once_per_session(shop, api):
    def read(session_id: str, path: str = "/work/shop/shop/billing/invoices.py") -> Any:
        payload = hook_event("PostToolUse", session_id=session_id, tool_name="Read",
                             tool_input={"file_path": path}, tool_response={"file": {"content": "x = 1"}})
        return api.post("/api/v1/capture/events", {"payload": payload, "project": "shop", "recall": True},
                        format="json").json()

    first = read("session-three")["additional_context"]
    assert first.startswith("# Winni recalled about shop/billing/invoices.py")
    assert "keep WeasyPrint there" in first and "turn 5 (assistant) · conversation " in first
    injection = Injection.objects.get(session_id="session-three")
    assert injection.trigger == "file" and injection.file_path == "shop/billing/invoices.py"
    assert read("session-three")["additional_context"] == ""  # once per file per session
    assert read("session-three", "/work/shop/README.md")["additional_context"] == ""  # nothing names it
    bash = hook_event("PostToolUse", session_id="session-four", tool_name="Bash",
                      tool_input={"command": "cat shop/billing/invoices.py"}, tool_response={"stdout": ""})
    assert api.post("/api/v1/capture/events", {"payload": bash, "project": "shop", "recall": True},
                    format="json").json()["additional_context"] == ""
    capture.capture_hook_event(payload=hook_event("SessionStart", session_id="session-three", source="clear"))
    assert "keep WeasyPrint there" in read("session-three")["additional_context"]


# --- visible in the admin -------------------------------------------------------------------------


def test_the_transcript_folds_what_winni_added_and_the_dashboard_counts_it(shop, api, admin_client):
    from conversations.admin import transcript_url
    from conversations.models import Conversation

    prompt = hook_event("UserPromptSubmit", prompt="Which database driver do we use for PostgreSQL?")
    body = api.post("/api/v1/capture/events", {"payload": prompt, "project": "shop", "recall": True},
                    format="json").json()
    api.post("/api/v1/capture/events", {"payload": hook_event("UserPromptSubmit", prompt="thanks"), "project": "shop",
                                        "recall": True}, format="json")
    conversation = Conversation.objects.get(session_id="session-two")
    html = admin_client.get(transcript_url(conversation.pk)).content.decode()
    assert html.count('class="winni-added"') == 1
    assert "Winni added" in html and "psycopg 3" in html
    turn = html.index('id="turn-1"')
    assert turn < html.index('class="winni-added"') < html.index('id="turn-2"')
    assert body["message_id"] == str(Injection.objects.get().message_id)
    dashboard = admin_client.get("/admin/").content.decode()
    assert "Automatic recall: blocks added per day" in dashboard
    assert "Share of captured prompts that received a block" in dashboard
    from winni_site import dashboard as board

    today = board.recall_per_day(1)[-1]
    assert today[1] == 1 and today[2] == 0.5  # one block; one of two prompts received one


def test_a_block_the_hook_gave_up_on_is_shown_not_delivered_counted_nowhere_and_may_be_given_again(
        shop, api, admin_client):
    from conversations.admin import transcript_url
    from conversations.models import Conversation
    from winni_site import dashboard as board

    question = "Which database driver do we use for PostgreSQL?"
    event = {"payload": hook_event("UserPromptSubmit", prompt=question), "project": "shop", "event_id": "evt-slow"}
    body = api.post("/api/v1/capture/events", {**event, "recall": True}, format="json").json()
    assert "psycopg 3" in body["additional_context"]
    # The hook had given up: with its next request it sends the event again, saying so.
    again = api.post("/api/v1/capture/events/batch", {"events": [
        {**event, "recall_undelivered": "the hook gave up waiting after 2.0 s"},
        {"payload": hook_event("UserPromptSubmit", prompt=question + " Really?"), "project": "shop",
         "event_id": "evt-next", "recall": True}]}, format="json")
    assert again.status_code == 200, again.content
    first, second = again.json()["results"]
    assert first["stored"] is False and "additional_context" not in first  # stored once
    # The event of the moment, last in the batch, gets its block: the items never reached the agent.
    assert "psycopg 3" in second["additional_context"]
    slow, given = Injection.objects.order_by("created_at")
    assert (slow.delivered, slow.undelivered_reason) == (False, "the hook gave up waiting after 2.0 s")
    assert given.delivered
    conversation = Conversation.objects.get(session_id="session-two")
    html = admin_client.get(transcript_url(conversation.pk)).content.decode()
    assert html.count("winni-added winni-undelivered") == 1 and html.count("Winni added") == 1
    assert "not delivered: the hook gave up waiting after 2.0 s" in html
    assert board.recall_per_day(1)[-1][1:] == (1, 0.5)  # one block delivered, to one of two prompts


def test_a_report_that_overtakes_the_slow_answer_still_marks_its_block(shop, api):
    from conversations.models import Message

    event = {"payload": hook_event("UserPromptSubmit", prompt="Which database driver do we use for PostgreSQL?"),
             "project": "shop", "event_id": "evt-overtaken"}
    stored = api.post("/api/v1/capture/events", {**event, "recall_undelivered": "the hook gave up waiting after 2.0 s"},
                      format="json").json()
    assert Message.objects.get(pk=stored["message_id"]).metadata["recall_undelivered"].startswith("the hook gave up")
    found = autorecall.context_for_prompt(prompt=event["payload"]["prompt"], project="shop", session_id="session-two",
                                          trigger="prompt", message_id=stored["message_id"])
    assert found["text"] and Injection.objects.get().delivered is False
    assert autorecall.injected_keys("session-two") == set()


def test_the_project_page_shows_and_sets_automatic_recall(shop, admin_client):
    url = f"/admin/core/project/{shop['shop'].pk}/change/"
    import re

    def checkbox() -> str:
        return re.search(r'<input type="checkbox" name="recall_inject"[^>]*>', admin_client.get(url).content.decode())[0]

    assert "checked" in checkbox()
    autorecall.project_recall_set(project="shop", enabled=False)
    assert "checked" not in checkbox()
    form = admin_client.get(url).context["adminform"].form
    data = {"name": "shop", "recall_inject": "on"}
    for formset in admin_client.get(url).context["inline_admin_formsets"]:
        management = formset.formset.management_form
        data.update({f"{management.prefix}-{name}": value for name, value in management.initial.items()})
        for inline_form in formset.formset.forms:
            data.update({f"{inline_form.prefix}-{name}": value for name, value in inline_form.initial.items()
                         if value is not None})
            data[f"{inline_form.prefix}-id"] = inline_form.instance.pk
            data[f"{inline_form.prefix}-project"] = shop["shop"].pk
    assert form is not None
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    shop["shop"].refresh_from_db()
    assert autorecall.project_recall_enabled(shop["shop"]) is True


def test_a_long_text_is_cut_around_its_densest_matched_words():
    text = "filler " * 300 + "the psycopg driver pool " + "filler " * 50 + "psycopg psycopg driver " + "tail " * 300
    snippet = autorecall._snippet(text, {"psycopg", "driver"}, 200)
    assert len(snippet) <= 204 and snippet.startswith("… ") and snippet.endswith(" …")
    assert "psycopg psycopg driver" in snippet  # the window holding the most matches, not the first one
    assert "pool" not in snippet
    assert autorecall._snippet("short text", {"x"}, 200) == "short text"


def test_the_best_rows_lead_the_block_then_one_row_per_conversation():
    """The best answer's best neighbour is often in its own session: recall's first three stay
    first; after them a conversation's further rows wait until every other has had one."""
    def row(conversation: str, n: int) -> autorecall.Candidate:
        return autorecall.Candidate(kind="message", id=f"{conversation}{n}", text="t",
                                    source={"conversation_id": conversation})

    rows = [row("a", 1), row("a", 2), row("b", 1), row("a", 3), row("c", 1), row("b", 2), row("d", 1)]
    assert [c.id for c in autorecall.spread(rows, 1)] == ["a1", "a2", "b1", "c1", "d1", "a3", "b2"]
    assert [c.id for c in autorecall.spread(rows, 1, lead=0)] == ["a1", "b1", "c1", "d1", "a2", "a3", "b2"]
    assert [c.id for c in autorecall.spread(rows, 2, lead=0)] == ["a1", "a2", "b1", "c1", "b2", "d1", "a3"]



def test_a_medallions_open_question_comes_after_the_answers():
    """Found using Winni: "Open question: how many times does the export job retry?" led the block
    above the reply that said it. A decision, stated, still leads."""
    def item(kind: str, key: str, score: float) -> autorecall.Candidate:
        return autorecall.Candidate(kind=kind, id=key, text="t", source={"conversation_id": key}, score=score,
                                    lexemes={"export", "retri"}, overlap=0.9, similarity=0.5)

    found = autorecall.Candidates(terms=["export", "retri"], weights={"export": 1.0, "retri": 1.0},
                                  medallion_items=[item("question", "q", 0.9), item("decision", "d", 0.8)],
                                  recalled=[item("message", "m", 1.0)])
    assert [c.id for c in autorecall.block_items(found)] == ["d", "m", "q"]


def test_one_shared_word_does_not_open_the_block():
    """An item opens the block with two of the prompt's specific words or more (and enough of its
    word weight and meaning), or by its meaning alone: "clear the cache" shares "cache" with many a
    turn of a coding project and asks for nothing in them."""
    def item(lexemes: set[str], overlap: float, similarity: float) -> autorecall.Candidate:
        return autorecall.Candidate(kind="message", id="m", text="t", source={}, lexemes=lexemes,
                                    overlap=overlap, similarity=similarity)

    gate = autorecall.GATE
    assert gate.passes(item({"psycopg", "driver"}, 0.8, 0.45))
    assert not gate.passes(item({"cach"}, 1.0, 0.45))  # one word, however much of the prompt it is
    assert gate.passes(item({"cach"}, 1.0, gate.similarity_alone))  # close in meaning alone
    assert not gate.passes(item({"psycopg", "driver"}, 0.8, 0.2))  # the words, too little of the meaning


def test_a_shared_name_opens_the_block_with_less_of_the_meaning():
    """"What did we decide about retries of the report-merge job?" is 0.35 from the long reply that
    states them: the project's name for the job says what the meaning cannot."""
    def item(lexemes: set[str], similarity: float) -> autorecall.Candidate:
        return autorecall.Candidate(kind="message", id="m", text="t", source={}, lexemes=lexemes, overlap=0.66,
                                    similarity=similarity)

    gate = autorecall.GATE
    for named in ({"report", "report-merg"}, {"export", "ledger/export.py"}, {"db2.internal", "stage"}):
        assert gate.passes(item(named, 0.35)) and gate.passes(item(named, gate.named_similarity_min))
        assert not gate.passes(item(named, 0.1))  # named, and about something else
        assert not gate.passes(item({next(iter(sorted(named)))}, 0.35))  # the name alone: one word
    assert not gate.passes(item({"report", "merg"}, 0.35))  # the same words, not joined into a name


def test_a_conversation_is_led_by_its_row_that_passes_the_gate():
    """A tool output that shares the project's name with the prompt can outrank, in its own
    conversation, the turn that answers; the answer leads that conversation in the block."""
    def row(conversation: str, n: int, similarity: float) -> autorecall.Candidate:
        return autorecall.Candidate(kind="message", id=f"{conversation}{n}", text="t",
                                    source={"conversation_id": conversation}, lexemes={"cinder", "api"},
                                    overlap=0.8, similarity=similarity)

    rows = [row("a", 1, 0.3), row("b", 1, 0.3), row("a", 2, 0.6), row("c", 1, 0.5)]
    ordered = autorecall.passing_first(rows, autorecall.GATE)
    assert [c.id for c in ordered] == ["a2", "b1", "a1", "c1"]  # each conversation keeps its places
    assert [c.id for c in autorecall.spread(ordered, 1, lead=0)] == ["a2", "b1", "c1", "a1"]


@pytest.mark.live
def test_the_web_process_warms_the_recall_path_before_it_listens(winni_server, live_token):
    """uvicorn listens only after the lifespan's startup, which waits for the warm-up: its first
    /healthz answer already says the recall path is warm."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{winni_server.url}/healthz", timeout=5) as answer:
        recall = json.loads(answer.read())["recall"]
    assert recall["status"] == "ok" and recall["warmed_in_ms"] > 0, recall


@pytest.mark.django_db
def test_what_the_worker_has_not_embedded_yet_is_recalled_by_the_next_sessions_first_prompt():
    """The previous session's turns may have no vector yet (a restart, a busy worker): their
    similarity is computed for the prompt, so the first prompt of the next session still finds them."""
    from memory.models import Embedding

    projects.project_create(name="till")
    said = capture.capture_hook_event(payload={
        "session_id": "s-one", "cwd": "/w/till", "hook_event_name": "UserPromptSubmit",
        "prompt": "Decision: the till rounds every cash total to the nearest five cents."}, project="till")
    assert not Embedding.objects.filter(object_id=said.message_id).exists()  # nothing ran the worker's task
    found = autorecall.context_for_prompt(prompt="Does the till round every cash total to five cents?",
                                          project="till", session_id="s-two")
    assert "nearest five cents" in found["text"], found["gate"]


def test_an_item_saying_what_one_given_already_says_is_left_out(shop, django_capture_on_commit_callbacks):
    """A fact stated in a turn, echoed by the reply and kept as a memory is given once: the items
    after the first that say it (nearly all their words in it) leave their room to other evidence."""
    fact = "The report-merge job retries five times with a thirty second backoff between attempts."
    with django_capture_on_commit_callbacks(execute=True):
        told = conversations.conversation_begin(session_id="session-two", project=shop["shop"])
        conversations.message_store(conversation_id=told.id, role="user", content=f"{fact} Note it.")
        conversations.message_store(conversation_id=told.id, role="assistant", content=f"Noted: {fact}")
        memories.memory_store(content=fact, project="shop")
    out = autorecall.context_for_prompt(prompt="How many times does the report-merge job retry after a backoff?",
                                        project="shop", session_id="session-three", record=False)
    assert out["text"].count("thirty second backoff") == 1, out["text"]


def test_what_the_agent_kept_ignoring_for_such_prompts_weighs_less_unless_the_prior_is_off(shop, settings):
    from agents import use
    from core.models import ItemUse

    prompt = "Which PostgreSQL database driver do we use, psycopg 3?"
    found = autorecall.candidates_for(prompt, shop["shop"], "session-two")
    first = autorecall.block_items(found)[0]
    assert found.prior == {}
    for n in range(4):
        ItemUse.objects.create(injection_id=n + 1, item_key=first.key, kind=first.kind, project=shop["shop"],
                               used=False, terms=found.terms)
    assert autorecall.candidates_for(prompt, shop["shop"], "session-three").prior == {
        first.key: pytest.approx(1 - use.PRIOR_STRENGTH * 4 / 5)}
    settings.WINNI_RECALL_USE_PRIOR = False
    assert autorecall.candidates_for(prompt, shop["shop"], "session-four").prior == {}


def test_a_digest_shows_only_what_the_items_before_it_did_not_say(db, django_capture_on_commit_callbacks):
    """Found by using Winni: the block gave the reply that answered, then its session's digest
    repeating that reply word for word under a heading the source line already dates; a digest
    whose decision a medallion had given listed it twice more ("Decisions: X … Last answer:
    Decision: X")."""
    answer = ("The export tests pass. Worth knowing: the nightly export job retries 5 times with a 30 second "
              "backoff, configured in ledger/export.py as EXPORT_RETRIES.")
    decision = "Decision: invoice totals are rounded half-even, once, on the total, never per line."
    sessions = {
        "export": [{"hook_event_name": "UserPromptSubmit",
                    "prompt": "Please check the nightly export: run its tests and tell me how its retries work."},
                   {"hook_event_name": "PostToolUse", "tool_name": "Bash",
                    "tool_input": {"command": "python -m pytest -q tests/test_export.py"},
                    "tool_response": {"stdout": "1 passed in 0.70s", "stderr": "", "interrupted": False}},
                   {"hook_event_name": "Stop", "last_assistant_message": answer}],
        "rounding": [{"hook_event_name": "UserPromptSubmit",
                      "prompt": "How should we do invoice rounding? Decide it once for the whole codebase."},
                     {"hook_event_name": "Stop", "last_assistant_message": decision}],
    }
    with django_capture_on_commit_callbacks(execute=True):
        for session, events in sessions.items():
            for event in [*events, {"hook_event_name": "SessionEnd"}]:
                capture.capture_hook_event(payload={"session_id": session, "cwd": "/home/dev/ledger", **event},
                                           project="ledger")
    rounding = SessionDigest.objects.get(session_id="rounding")
    assert "Decisions: Invoice totals are rounded half-even" in rounding.text
    assert "Last answer" not in rounding.text  # it only said the decision again

    out = autorecall.context_for_prompt(prompt="How many times does the nightly export job retry?",
                                        project="ledger", session_id="later")
    assert out["text"].count("retries 5 times") == 1, out["text"]
    assert out["items"][0]["kind"] == "message"
    digest = [line for line in out["text"].splitlines() if line.startswith("- [digest")]
    assert len(digest) == 1 and "Commands: Bash `python -m pytest -q tests/test_export.py`" in digest[0], out["text"]
    assert "Session digest ·" not in out["text"] and "Last answer" not in out["text"]

    out = autorecall.context_for_prompt(prompt="How are invoice totals rounded?", project="ledger",
                                        session_id="later-still")
    assert out["text"].count("rounded half-even") == 1, out
    assert [item["kind"] for item in out["items"]] in (["decision"], ["message"]), out["text"]


def test_a_digest_of_a_session_that_asked_the_same_is_no_evidence(db, django_capture_on_commit_callbacks):
    """Found by using Winni: "what did we decide about money amounts?" asked again in a later
    session brought, beside the decision, the digest of the session that had asked it before
    ("Asked: what did we decide about money amounts?; … Commands: … Last answer: …"): its words
    and its meaning were those of the repeated prompt."""
    sessions = {
        "rounding": [{"hook_event_name": "UserPromptSubmit",
                      "prompt": "How should we do invoice rounding? Decide it once for the whole codebase."},
                     {"hook_event_name": "Stop", "last_assistant_message":
                      "Decision: invoice totals are rounded half-even, once, on the total, never per line."}],
        "asked-before": [{"hook_event_name": "UserPromptSubmit", "prompt": "What did we decide about invoice rounding?"},
                         {"hook_event_name": "PostToolUse", "tool_name": "Bash",
                          "tool_input": {"command": "git log --oneline -3"},
                          "tool_response": {"stdout": "4f2a1c0 bump deps", "stderr": "", "interrupted": False}},
                         {"hook_event_name": "Stop", "last_assistant_message": "Half-even, on the total."}],
    }
    with django_capture_on_commit_callbacks(execute=True):
        for session, events in sessions.items():
            for event in [*events, {"hook_event_name": "SessionEnd"}]:
                capture.capture_hook_event(payload={"session_id": session, "cwd": "/home/dev/ledger", **event},
                                           project="ledger")
    assert "Asked: What did we decide about invoice rounding?" in SessionDigest.objects.get(session_id="asked-before").text
    out = autorecall.context_for_prompt(prompt="What did we decide about invoice rounding?", project="ledger",
                                        session_id="later")
    assert "rounded half-even" in out["text"]
    assert not [item for item in out["items"] if item["kind"] == "digest"
                and item["source"]["session_id"] == "asked-before"], out["text"]
    assert "git log" not in out["text"]


def test_a_digest_does_not_pass_on_meaning_alone():
    gate = autorecall.GATE
    digest = autorecall.Candidate(kind="digest", id="d", text="t", source={}, similarity=0.9)
    assert not gate.passes(digest)
    assert gate.passes(autorecall.Candidate(kind="memory", id="m", text="t", source={}, similarity=0.9))


def test_an_item_fits_when_its_own_line_fits(shop):
    """The room an item's text has is what is left after its own source line: a budget that holds
    the first two items exactly gives both, whole (a fixed reserve for any source line left a block
    short, or cut its last item, with room to spare)."""
    prompt = "Which PostgreSQL database driver do we use, psycopg 3?"
    whole = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="budget-a", max_chars=20_000)
    lines = whole["text"].splitlines()
    assert len(whole["items"]) >= 2
    budget = len("\n".join(lines[:3])) + 10
    out = autorecall.context_for_prompt(prompt=prompt, project="shop", session_id="budget-b", max_chars=budget)
    assert out["text"] == "\n".join(lines[:3]) and len(out["items"]) == 2


def test_a_tool_call_counts_the_words_its_line_shows_not_its_json_keys(db, django_capture_on_commit_callbacks):
    """A captured call is stored as JSON and its keys are words of its search_vector: `tool_name`
    gave every call the prompt's "name", `file_path` its "file". Found using Winni: "what did we
    decide about feature flag names?" brought a `pytest` run into the block beside the decision.
    Nor does a call share the name of the project it ran in: its paths hold it."""
    shopfront = projects.project_create(name="shopfront", path="/work/shopfront")
    with django_capture_on_commit_callbacks(execute=True):
        talk = conversations.conversation_begin(session_id="shopfront-one", project=shopfront)
        for role, text in (("user", "How should we write the names of feature flags?"),
                           ("assistant", "Decision about feature flag names: kebab-case.")):
            conversations.message_store(conversation_id=talk.id, role=role, content=text)
        for command, stdout in (("pytest -q", "3 failed, 41 passed"), ("cat src/flags/registry.py", "FLAGS = {}"),
                                ("ls /work/shopfront/src", "main.py")):
            capture.capture_hook_event(payload=hook_event(
                "PostToolUse", session_id="shopfront-one", cwd="/work/shopfront/src", tool_name="Bash",
                tool_input={"command": command, "description": "check"}, tool_response={"stdout": stdout}),
                project="shopfront")
    prompt = "What did we decide about feature flag names in shopfront?"
    found = autorecall.candidates_for(prompt, shopfront, "shopfront-two", gate=autorecall.GATE)
    calls = {c.shown.split(":")[0]: c.lexemes for c in found.recalled if c.source.get("role") == "tool"}
    assert calls == {"Bash `pytest -q`": set(),  # "name" was its key's, not its words
                     "Bash `cat src/flags/registry.py`": {"flag"},  # its line names the flags' file
                     "Bash `ls /work/shopfront/src`": set()}  # where it ran, not what it is about
    text = autorecall.context_for_prompt(prompt=prompt, project="shopfront", session_id="shopfront-two")["text"]
    assert "kebab-case" in text and "pytest" not in text and "/work/shopfront/src" not in text


def test_a_tool_call_does_not_pass_on_meaning_alone():
    """A call's vector is of a command, a path and a file's first lines: in all-MiniLM-L6-v2,
    `Read src/components/AuditTable.tsx` was 0.61 from "What did we decide about the port of the
    ember-docs staging database?", as close as the turn that answered it."""
    def item(role: str, lexemes: set[str]) -> autorecall.Candidate:
        return autorecall.Candidate(kind="message", id="m", text="t", source={"role": role}, lexemes=lexemes,
                                    overlap=0.6 if lexemes else 0.0, similarity=0.65)

    gate = autorecall.GATE
    assert gate.passes(item("assistant", set())) and not gate.passes(item("tool", set()))
    assert gate.passes(item("tool", {"staging", "port"}))  # the words its line shows, and the meaning
