"""Secrets and `<private>` spans never reach the database: every entry point that stores free text
(hook events, transcript import, the MCP logging proxy, messages one by one and in bulk, memories,
orchestration results, cached answers, medallions and their evidence, startup contexts) redacts
first, and the answer says how many secrets went. The fake secrets are built at run time; the
private tags from pieces."""
from __future__ import annotations

import base64
import json
import logging
import os
import random
import string
import subprocess
import sys

import pytest
from django.db import connection

from agents import capture
from contexts import services as contexts
from conversations import services as conversations
from conversations.models import Conversation, FiedlerResult, Message
from core import projects
from core.env import env_globs
from core.redaction import counting, redact
from medallions import services as medallions
from medallions.models import Medallion, MedallionJob
from memory import services as memories
from memory.librarian import services as librarian
from memory.librarian.models import QueryMemory
from memory.models import Memory
from tests.medallion_support import document
from tests.support import ROOT, structured

RNG = random.Random(2121_21)
B62 = string.ascii_letters + string.digits
GITHUB = "ghp_" + "".join(RNG.choice(B62) for _ in range(36))
AWS_ID = "AKIA" + "".join(RNG.choice(string.ascii_uppercase + "234567") for _ in range(16))
OPEN, CLOSE = "<" + "private>", "</" + "private>"
GH = "[REDACTED:github-token]"
AWS = "[REDACTED:aws-access-key]"
TEXT = f"cat .env\nGITHUB_TOKEN={GITHUB}\nok"


def assert_clean(*texts: object) -> None:
    for text in texts:
        dumped = text if isinstance(text, str) else json.dumps(text, default=str)
        assert GITHUB not in dumped and AWS_ID not in dumped, dumped[:300]


def nothing_stored_anywhere() -> None:
    """No table of Winni holds the secret, whatever column it went to."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                       "AND table_type = 'BASE TABLE'")
        tables = [row[0] for row in cursor.fetchall()]
        for table in tables:
            cursor.execute(f'SELECT count(*) FROM "{table}" AS t WHERE t::text LIKE %s OR t::text LIKE %s',
                           [f"%{GITHUB}%", f"%{AWS_ID}%"])
            assert cursor.fetchone()[0] == 0, f"{table} holds a secret"


@pytest.mark.django_db
class TestServices:
    def test_a_message_and_its_metadata_are_redacted_and_counted(self):
        conversation = conversations.conversation_begin(metadata={"note": f"key {AWS_ID}"})
        with counting() as tally:
            message = conversations.message_store(conversation_id=conversation.id, role="tool", content=TEXT,
                                                  metadata={"env": [f"token={GITHUB}"]})
        stored = Message.objects.get(pk=message.pk)
        assert stored.content == f"cat .env\nGITHUB_TOKEN={GH}\nok"
        assert stored.metadata == {"env": [f"token={GH}"]}
        assert Conversation.objects.get(pk=conversation.pk).metadata == {"note": f"key {AWS}"}
        assert tally.fields() == {"redacted": 2, "redacted_types": {"github-token": 2}, "private_spans": 0}
        nothing_stored_anywhere()

    def test_the_full_text_index_never_sees_the_secret(self):
        conversation = conversations.conversation_begin()
        conversations.message_store(conversation_id=conversation.id, role="tool", content=TEXT)
        assert not Message.objects.filter(search_vector=GITHUB.lower()).exists()
        with connection.cursor() as cursor:
            cursor.execute("SELECT search_vector::text FROM conversations_message")
            assert_clean(cursor.fetchone()[0])

    def test_bulk_messages_are_redacted(self):
        conversation, rows = conversations.messages_store_bulk(
            messages=[{"role": "user", "content": f"use {AWS_ID}"}, {"role": "tool", "content": TEXT}],
            metadata={"secret_note": GITHUB})
        assert [m.content for m in Message.objects.filter(conversation=conversation).order_by("turn_number")] == [
            f"use {AWS}", f"cat .env\nGITHUB_TOKEN={GH}\nok"]
        nothing_stored_anywhere()

    def test_a_private_span_is_stored_as_private_even_with_scrubbing_off(self, settings):
        settings.WINNI_SCRUB = False
        conversation = conversations.conversation_begin()
        with counting() as tally:
            message = conversations.message_store(conversation_id=conversation.id, role="user",
                                                  content=f"deploy {OPEN}the staging password is hunter2{CLOSE} now")
        assert Message.objects.get(pk=message.pk).content == "deploy [private] now"
        assert tally.fields() == {"redacted": 0, "redacted_types": {}, "private_spans": 1}
        # Scrubbing off keeps what is not marked private: that is what the setting is for.
        kept = conversations.message_store(conversation_id=conversation.id, role="tool", content=TEXT)
        assert GITHUB in Message.objects.get(pk=kept.pk).content

    def test_a_memory_is_redacted_before_its_duplicate_check(self):
        memory, created = memories.memory_store(content=f"The CI token is {GITHUB}", metadata={"k": AWS_ID})
        again, created_again = memories.memory_store(content=f"The CI token is {GITHUB}")
        assert created and not created_again and again.pk == memory.pk
        stored = Memory.objects.get(pk=memory.pk)
        assert stored.content == f"The CI token is {GH}" and stored.metadata == {"k": AWS}
        nothing_stored_anywhere()

    def test_orchestration_results_redact_prompt_output_and_error(self):
        row = conversations.fiedler_result_store(correlation_id="c1", model="m", prompt=f"use {GITHUB}",
                                                 output=f"done with {AWS_ID}", error_message=GITHUB,
                                                 metadata={"args": GITHUB})
        rows = conversations.fiedler_results_store_batch(results=[
            {"correlation_id": "c2", "model": "m", "output": TEXT, "prompt": OPEN + "x" + CLOSE}])
        stored = FiedlerResult.objects.get(pk=row.pk)
        assert (stored.prompt, stored.output, stored.error_message) == (f"use {GH}", f"done with {AWS}", GH)
        assert FiedlerResult.objects.get(pk=rows[0].pk).prompt == "[private]"
        nothing_stored_anywhere()

    def test_cached_answers_and_their_queries_are_redacted(self):
        with counting() as tally:
            librarian.librarian_remember(query=f"what is the token {GITHUB}", answer=f"it is {AWS_ID}")
        entry = QueryMemory.objects.get()
        assert entry.query_text == f"what is the token {GH}" and entry.answer == f"it is {AWS}"
        assert tally.redacted == 2
        # The same question, secret and all, finds its entry.
        assert librarian.librarian_forget(query=f"what is the token {GITHUB}")
        nothing_stored_anywhere()

    def test_medallion_content_and_checkpoint_evidence_are_redacted(self):
        doc = document(summary={"high_level": f"Deploy with {GITHUB}", "subsystems": []})
        medallion = medallions.medallion_create(document=doc)
        assert Medallion.objects.get(pk=medallion.pk).summary["high_level"] == f"Deploy with {GH}"
        job = medallions.medallion_job_create(
            scope={"graph_nodes": ["repo:x"], "tags": []},
            evidence={"session_summary": f"used {AWS_ID}", "transcripts": [TEXT], "artefacts": [{"k": GITHUB}]})
        evidence = MedallionJob.objects.get(pk=job.pk).evidence
        assert evidence["session_summary"] == f"used {AWS}"
        assert evidence["transcripts"] == [f"cat .env\nGITHUB_TOKEN={GH}\nok"]
        nothing_stored_anywhere()

    def test_startup_contexts_are_redacted(self):
        context = contexts.context_set(name="ops", content=f"Deploy key: {GITHUB}", actor="t")
        assert contexts.context_get(name="ops").content == f"Deploy key: {GH}"
        assert context.content == f"Deploy key: {GH}"
        nothing_stored_anywhere()

    def test_nothing_of_the_secret_is_logged(self, caplog):
        caplog.set_level(logging.INFO, logger="winni")
        conversation = conversations.conversation_begin()
        conversations.message_store(conversation_id=conversation.id, role="tool", content=TEXT)
        assert any(getattr(r, "fields", {}).get("types") == {"github-token": 1} for r in caplog.records)
        assert_clean(caplog.text, [getattr(r, "fields", {}) for r in caplog.records])

    def test_redacting_twice_costs_nothing_and_counts_once(self):
        with counting() as tally:
            once = redact(TEXT)
            assert redact(once) is once
        assert tally.redacted == 1


@pytest.mark.django_db
class TestCapture:
    def event(self, name, **fields):
        return {"session_id": "s-1", "cwd": "/work/alpha", "hook_event_name": name, **fields}

    def test_a_secret_at_the_start_of_a_tool_output_over_the_limit_is_still_redacted(self, settings):
        settings.WINNI_CAPTURE_TOOL_MAX_CHARS = 200
        # The limit cuts the token in two: cut first, its first half would no longer be recognised.
        output = f"{'x' * 100} {GITHUB} " + "y" * 5000
        capture.capture_hook_event(payload=self.event("PostToolUse", tool_name="Bash", tool_input={"command": "env"},
                                                      tool_response={"stdout": output}))
        content = Message.objects.get().content
        assert "truncated by Winni" in content and "[REDACTED:" in content
        assert GITHUB[:8] not in content

    def test_prompts_replies_and_tool_calls_are_redacted(self):
        capture.capture_hook_event(payload=self.event("UserPromptSubmit", prompt=f"use {GITHUB}"))
        capture.capture_hook_event(payload=self.event("PostToolUse", tool_name="Bash",
                                                      tool_input={"command": f"export AWS={AWS_ID}"},
                                                      tool_response={"stdout": TEXT}))
        capture.capture_hook_event(payload=self.event("Stop", last_assistant_message=f"I used {OPEN}x{CLOSE}"))
        contents = list(Message.objects.order_by("turn_number").values_list("content", flat=True))
        assert contents[0] == f"use {GH}" and contents[2] == "I used [private]"
        assert GH in contents[1] and AWS in contents[1]
        nothing_stored_anywhere()

    def test_transcript_lines_are_redacted(self):
        lines = [json.dumps({"type": "user", "uuid": "u1", "sessionId": "t-1", "cwd": "/w",
                             "message": {"role": "user", "content": f"key {GITHUB}"}}),
                 json.dumps({"type": "assistant", "uuid": "u2", "sessionId": "t-1",
                             "message": {"role": "assistant", "content": [
                                 {"type": "tool_use", "name": "Bash", "id": "x", "input": {"command": f"echo {AWS_ID}"}},
                                 {"type": "tool_result", "tool_use_id": "x", "content": TEXT}]}})]
        stats = capture.transcript_import_lines(lines)
        assert stats.added == 3
        nothing_stored_anywhere()

    def test_proxied_tool_calls_are_redacted(self):
        capture.capture_proxy_message(upstream="gh", client_session="c", direction="call", request_id=1,
                                      body={"tool": "login", "arguments": {"token": GITHUB}})
        capture.capture_proxy_message(upstream="gh", client_session="c", direction="result", request_id=1,
                                      body={"tool": "login", "result": {"content": [{"type": "text", "text": TEXT}]}})
        assert Message.objects.count() == 2
        nothing_stored_anywhere()


@pytest.mark.django_db
class TestRest:
    def test_a_stored_message_says_how_many_secrets_were_redacted(self, api):
        conversation = api.post("/api/v1/conversations/", {}, format="json").json()
        assert "redacted" not in conversation  # nothing to redact: nothing said
        answer = api.post(f"/api/v1/conversations/{conversation['conversation_id']}/messages/",
                          {"role": "tool", "content": f"{TEXT} {AWS_ID}"}, format="json")
        assert answer.status_code == 201, answer.content
        body = answer.json()
        assert body["redacted"] == 2
        assert body["redacted_types"] == {"aws-access-key": 1, "github-token": 1}
        assert body["private_spans"] == 0
        nothing_stored_anywhere()

    def test_a_hook_event_answer_counts_the_redactions(self, api):
        answer = api.post("/api/v1/capture/events", {"payload": {
            "session_id": "s-2", "cwd": "/w", "hook_event_name": "UserPromptSubmit",
            "prompt": f"{OPEN}mine{CLOSE} and {GITHUB}"}}, format="json")
        assert answer.status_code == 201
        assert answer.json()["redacted"] == 1 and answer.json()["private_spans"] == 1

    def test_reads_say_nothing_about_redaction(self, api):
        answer = api.get("/api/v1/conversations/")
        assert answer.status_code == 200 and "redacted" not in answer.json()

    def test_a_refused_write_has_the_error_shape_only(self, api):
        answer = api.post("/api/v1/memories/", {"content": GITHUB, "tags": "not-a-list"}, format="json")
        assert answer.status_code == 400 and "redacted" not in answer.json()
        nothing_stored_anywhere()


@pytest.mark.live
class TestMcp:
    def test_the_main_tools_redact_and_count_over_the_real_transport(self, mcp_legacy):
        begun = structured(mcp_legacy.call_raw("dewey_begin_conversation", {}))
        stored = structured(mcp_legacy.call_raw("dewey_store_message", {
            "conversation_id": begun["conversation_id"], "role": "tool", "content": TEXT}))
        assert stored["redacted"] == 1 and stored["redacted_types"] == {"github-token": 1}
        bulk = structured(mcp_legacy.call_raw("dewey_store_messages_bulk", {
            "conversation_id": begun["conversation_id"],
            "messages": [{"role": "user", "content": f"{AWS_ID} {OPEN}p{CLOSE}"}]}))
        assert bulk["redacted"] == 1 and bulk["private_spans"] == 1
        memory = structured(mcp_legacy.call_raw("store_memory", {"content": f"token {GITHUB}"}))
        assert memory["redacted"] == 1
        context = structured(mcp_legacy.call_raw("dewey_set_startup_context", {"name": "x", "content": TEXT}))
        assert context["redacted"] == 1
        fiedler = structured(mcp_legacy.call_raw("dewey_store_fiedler_result", {
            "correlation_id": "c", "model": "m", "prompt": GITHUB, "output": AWS_ID}))
        assert fiedler["redacted"] == 2
        remembered = structured(mcp_legacy.call_raw("librarian_remember", {"query": "which key", "answer": GITHUB}))
        assert remembered["redacted"] == 1
        got = structured(mcp_legacy.call_raw("dewey_get_conversation", {"conversation_id": begun["conversation_id"]}))
        assert "redacted" not in got
        assert_clean(got)
        nothing_stored_anywhere()


@pytest.mark.django_db
class TestCaptureExclude:
    def event(self, name, cwd="/home/me/client-acme/app", **fields):
        return {"session_id": "s-x", "cwd": cwd, "hook_event_name": name, **fields}

    def test_events_of_an_excluded_cwd_are_acknowledged_and_dropped(self, api, settings):
        settings.WINNI_CAPTURE_EXCLUDE = ["/home/me/client-*"]
        for payload in (self.event("UserPromptSubmit", prompt="hello"),
                        self.event("PostToolUse", tool_name="Bash", tool_response="x"),
                        self.event("SessionEnd")):
            answer = api.post("/api/v1/capture/events", {"payload": payload}, format="json")
            assert answer.status_code == 200, answer.content
            assert answer.json()["stored"] is False and answer.json()["reason"] == capture.EXCLUDED
        assert not Conversation.objects.exists() and not Message.objects.exists()
        api.post("/api/v1/capture/events", {"payload": self.event("UserPromptSubmit", cwd="/home/me/mine",
                                                                  prompt="kept")}, format="json")
        assert list(Message.objects.values_list("content", flat=True)) == ["kept"]

    def test_an_excluded_project_by_name_gets_no_startup_text(self, settings):
        project = projects.project_create(name="Client Secret Work")
        contexts.context_set(name="ctx", content="project context", actor="t", project=project)
        contexts.context_set(name="global", content="global context", actor="t")
        assert "project context" in capture.session_start_text(project=project.slug)
        settings.WINNI_CAPTURE_EXCLUDE = ["client-*"]  # the slug
        assert capture.session_start_text(project=project.slug) == ""
        capture.capture_hook_event(payload=self.event("UserPromptSubmit", cwd="/w", prompt="x"), project=project.slug)
        assert not Message.objects.exists()

    def test_transcripts_of_excluded_folders_are_not_imported(self, settings):
        settings.WINNI_CAPTURE_EXCLUDE = ["*/secret/*"]
        line = {"type": "user", "uuid": "u1", "sessionId": "t-9", "cwd": "/w/secret/x",
                "message": {"role": "user", "content": "hi"}}
        stats = capture.transcript_import_lines([json.dumps(line)])
        assert (stats.added, stats.excluded) == (0, 1) and not Message.objects.exists()


@pytest.mark.parametrize("value, named", [
    ("ok-*,[abc", "'[abc'"),
    ("a,,b", "empty glob"),
])
def test_an_invalid_exclude_glob_stops_start_up_naming_it(tmp_path, value, named):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev", "WINNI_DATA_DIR": str(tmp_path),
           "DATABASE_URL": "postgresql://x@/y?host=/nonexistent", "REDIS_URL": "redis://127.0.0.1:1/0",
           "WINNI_CAPTURE_EXCLUDE": value}
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    last = result.stderr.splitlines()[-1]
    assert "ImproperlyConfigured" in last and "WINNI_CAPTURE_EXCLUDE" in last and named in last


def test_valid_globs_are_read_in_order():
    os.environ["PRIVACY_TEST_GLOBS"] = " client-*, /home/*/private/* ,[]x],[!a]b "
    try:
        assert env_globs("PRIVACY_TEST_GLOBS") == ["client-*", "/home/*/private/*", "[]x]", "[!a]b"]
    finally:
        del os.environ["PRIVACY_TEST_GLOBS"]


@pytest.mark.django_db
def test_a_tool_input_under_a_secret_named_key_is_redacted_and_lines_stay_apart():
    password = "Zq8" + "".join(RNG.choice(B62) for _ in range(13))
    capture.capture_hook_event(payload={
        "session_id": "s-k", "cwd": "/w", "hook_event_name": "PostToolUse", "tool_name": "Login",
        "tool_input": {"username": "me", "password": password},
        # In the JSON text these lines join with \n: scanned raw, a reference stays a reference.
        "tool_response": {"stdout": "\n".join(["secret_key = settings.SECRET_KEY", "next line"])}})
    content = Message.objects.get().content
    assert password not in content and "[REDACTED:named-secret]" in content
    assert "settings.SECRET_KEY" in content


# Credentials of the formats issue #43 added (hosted services, signed-token standards, encoded
# credentials), built at run time, planted through every interface and read back through search
# and get. What must never come back: each value, in whole or in part (its last 16 characters).
def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _rand(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


B64URL = B62 + "-_"
DOPPLER = "dp.pt." + _rand(B62, 43)  # 49 characters: it fits in a tag
VAULT = "hvs.CAESI" + _rand(B64URL, 86)
AZURE_AD = _rand(B62, 3) + "8Q~" + _rand(B62, 34)
SAS_SIG = base64.b64encode(RNG.randbytes(32)).decode().replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
JWE = ".".join([_b64url(b'{"alg":"RSA-OAEP-256","enc":"A256GCM"}'), _b64url(RNG.randbytes(256)),
                _b64url(RNG.randbytes(12)), _b64url(RNG.randbytes(200)), _b64url(RNG.randbytes(16))])
SPLIT_JWT = ".".join([_b64url(b'{"alg":"HS256","typ":"JWT"}'), _b64url(b'{"sub":"deployer","exp":1900000000}'),
                      _b64url(RNG.randbytes(32))])
COOKIE = _rand(string.ascii_lowercase + string.digits, 32)
DOCKER_AUTH = base64.b64encode(f"ci-bot:{_rand(B62, 24)}".encode()).decode()
JWT_LINES = [SPLIT_JWT[i:i + 60] for i in range(0, len(SPLIT_JWT), 60)]  # `fold -w 60`
NEW_SECRETS = [DOPPLER, VAULT, AZURE_AD, SAS_SIG, JWE, *[line for line in JWT_LINES[1:] if len(line) >= 16], COOKIE,
               DOCKER_AUTH]
NEW_TEXT = "\n".join([
    "$ printenv | grep -i billing", f"DOPPLER_TOKEN={DOPPLER}", f"client secret {AZURE_AD} rotated",
    f"$ curl -v 'https://acme.blob.core.windows.net/billing/a.csv?sv=2022-11-02&sp=r&sig={SAS_SIG}'",
    f"> X-Vault-Token: {VAULT}", f"< set-cookie: sessionid={COOKIE}; Path=/; HttpOnly",
    f"billing id_token {JWE}", "$ kubectl create token billing | fold -w 60",
    *JWT_LINES,
    '$ cat ~/.docker/config.json', '{"auths": {"ghcr.io": {"auth": "' + DOCKER_AUTH + '"}}}',
])


def assert_no_new_secret(*texts: object) -> None:
    for text in texts:
        dumped = text if isinstance(text, str) else json.dumps(text, default=str)
        for secret in NEW_SECRETS:
            assert secret[-16:] not in dumped, (secret[:12], dumped[:400])


def no_new_secret_stored() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                       "AND table_type = 'BASE TABLE'")
        for (table,) in cursor.fetchall():
            for secret in NEW_SECRETS:
                cursor.execute(f'SELECT count(*) FROM "{table}" AS t WHERE t::text LIKE %s', [f"%{secret[-16:]}%"])
                assert cursor.fetchone()[0] == 0, f"{table} holds {secret[:12]}…"


@pytest.mark.django_db
class TestNewFormatsThroughEveryInterface:
    def test_the_text_holds_every_secret_and_scrubbing_removes_them(self):
        assert all(secret[-16:] in NEW_TEXT for secret in NEW_SECRETS)
        assert_no_new_secret(str(redact(NEW_TEXT)))

    def test_capture_import_and_proxy_then_search_and_get(self, api):
        event = {"session_id": "s-43", "cwd": "/work/billing"}
        capture.capture_hook_event(payload={**event, "hook_event_name": "UserPromptSubmit",
                                            "prompt": f"billing: use {DOPPLER} for now"})
        capture.capture_hook_event(payload={**event, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                                            "tool_input": {"command": f"vault login {VAULT}", "token": COOKIE},
                                            "tool_response": {"stdout": NEW_TEXT}})
        capture.transcript_import_lines([json.dumps({
            "type": "user", "uuid": "u43", "sessionId": "t-43", "cwd": "/work/billing",
            "message": {"role": "user", "content": f"billing Cookie: sessionid={COOKIE} and {NEW_TEXT}"}})])
        capture.capture_proxy_message(upstream="vault", client_session="c43", direction="call", request_id=1,
                                      body={"tool": "billing_login", "arguments": {"token": VAULT, "note": NEW_TEXT}})
        found = api.get("/api/v1/messages/search/", {"query": "billing"})
        assert found.status_code == 200 and found.json()["total"] >= 3
        assert_no_new_secret(found.json())
        for conversation in api.get("/api/v1/conversations/").json()["conversations"]:
            got = api.get(f"/api/v1/conversations/{conversation['conversation_id']}/")
            assert got.status_code == 200
            assert_no_new_secret(got.json())
        assert_no_new_secret(api.post("/api/v1/recall", {"query": "billing cookie"}, format="json").json())
        no_new_secret_stored()

    def test_rest_writes_then_search_and_get(self, api):
        conversation = api.post("/api/v1/conversations/", {"metadata": {"ci": VAULT}}, format="json").json()
        stored = api.post(f"/api/v1/conversations/{conversation['conversation_id']}/messages/",
                          {"role": "tool", "content": NEW_TEXT, "metadata": {"env": [f"X={DOPPLER}"]}}, format="json")
        assert stored.status_code == 201 and stored.json()["redacted"] >= len(NEW_SECRETS)
        memory = api.post("/api/v1/memories/", {"content": f"billing deploys read {NEW_TEXT}",
                                                "tags": ["billing", DOPPLER]}, format="json")
        assert memory.status_code == 201, memory.content
        memory_id = memory.json()["memory_id"]
        assert "[REDACTED:doppler-token]" in memory.json()["tags"]
        updated = api.patch(f"/api/v1/memories/{memory_id}/", {"content": f"billing now reads {AZURE_AD}",
                                                               "reason": f"rotated {VAULT}"}, format="json")
        assert updated.status_code == 200, updated.content
        fiedler = api.post("/api/v1/fiedler-results/", {"correlation_id": "c43", "model": "m", "prompt": NEW_TEXT,
                                                        "output": f"billing {JWE}",
                                                        "metadata": {"headers": f"Cookie: sessionid={COOKIE}"}},
                           format="json")
        assert fiedler.status_code == 201, fiedler.content
        reads = [
            api.get(f"/api/v1/conversations/{conversation['conversation_id']}/"),
            api.get("/api/v1/messages/search/", {"query": "billing"}),
            api.get(f"/api/v1/memories/{memory_id}/"), api.get(f"/api/v1/memories/{memory_id}/history/"),
            api.post("/api/v1/memories/search/", {"query": "billing deploys"}, format="json"),
            api.get("/api/v1/fiedler-results/", {"text": "billing"}),
            api.post("/api/v1/recall", {"query": "billing"}, format="json"),
        ]
        for read in reads:
            assert read.status_code == 200, read.content
            assert_no_new_secret(read.json())
        no_new_secret_stored()

    def test_a_tag_whose_redaction_is_longer_than_its_secret_still_fits(self):
        short = "LTAI5t" + _rand(B62, 10)  # 16 characters become `[REDACTED:alibaba-access-key]` (29)
        memory, _ = memories.memory_store(content="billing keys", tags=["x" * 33 + " " + short])
        assert Memory.objects.get(pk=memory.pk).tags == [("x" * 33 + " [REDACTED:alibaba-access-key]")[:50]]

    def test_medallion_scope_model_info_and_a_failed_jobs_error(self):
        doc = document(summary={"high_level": f"Deploy with {VAULT}", "subsystems": []})
        doc["scope"] = {**doc["scope"], "tags": [*doc["scope"].get("tags", []), f"key {AZURE_AD}"]}
        doc["meta"] = {"model_info": {"provider": "x", "model": f"m {DOPPLER}"}}
        medallion = medallions.medallion_create(document=doc)
        assert_no_new_secret(medallions.medallion_get(medallion_id=medallion.id).document())
        job = medallions.medallion_job_create(scope={"graph_nodes": ["repo:billing"], "tags": [DOPPLER]},
                                              evidence={"session_summary": NEW_TEXT})
        job.refresh_from_db()
        assert_no_new_secret(job.tags, job.evidence)
        no_new_secret_stored()
