"""Security walk: every URL pattern (from the resolver) and every MCP tool (from tools/list) is
tried without a token and with a revoked one, so endpoints added later are covered without
editing this file. Plus: foreign Origin on /mcp, SQL-looking and oversized input, admin login,
and secrets never written to a log."""
from __future__ import annotations

import json
import logging
import re
import uuid
from typing import Iterator

import httpx
import pytest
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.urls.resolvers import RegexPattern
from rest_framework.test import APIClient

from conversations import services as conv
from conversations.models import Conversation, Message
from core.logs import JsonFormatter
from winni_site import auth

PLANTED = "planted-secret-content-7f3a"
# Open by design, and they read no stored data: checked for the planted content instead.
PUBLIC = {"healthz", "api/schema/", "api/docs/", "api/redoc/"}
METHODS = ["get", "post", "put", "patch", "delete"]
SAMPLE = {"int": "1", "uuid": None, "str": None, "slug": "x", "path": "x"}
SQLISH = [
    "'; DROP TABLE conversations_message; --",
    "1 OR 1=1; SELECT pg_sleep(5); --",
    "\\x00\\' UNION SELECT secret_sha256 FROM winni_site_apitoken --",
    "$$; DELETE FROM conversations_conversation; $$",
]


def _as_route(pattern: object) -> str:
    """A path() route as is; a re_path() regex as a route ("^x/(?P<id>[^/]+)/?$" → "x/<id>/")."""
    if isinstance(pattern, RegexPattern):
        text = re.sub(r"(\$|\\Z)$", "", pattern._regex.removeprefix("^"))
        text = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", text)
        return text.replace("/?", "/").replace("\\", "")
    return str(pattern)


def _route_patterns(patterns=None, prefix: str = "") -> Iterator[str]:
    """Every route under the resolver as a path template ("api/v1/conversations/<str:id>/")."""
    for entry in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(entry, URLResolver):
            if str(entry.pattern).startswith("admin/"):
                continue  # the admin is walked through its registered models below
            yield from _route_patterns(entry.url_patterns, prefix + _as_route(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + _as_route(entry.pattern)


def _concrete(template: str, object_id: str) -> str:
    def fill(match: re.Match) -> str:
        return SAMPLE.get(match.group(1)) or object_id

    return "/" + re.sub(r"<(?:(\w+):)?\w+>", fill, template)


@pytest.fixture
def planted(db):
    conversation = conv.conversation_begin(session_id=PLANTED)
    conv.message_store(conversation_id=conversation.id, role="user", content=PLANTED)
    return str(conversation.id)


def _walk(client: APIClient, planted: str) -> list[str]:
    templates = list(_route_patterns())
    assert any(t.startswith("api/v1/") for t in templates)
    problems = []
    for template in templates:
        url = _concrete(template, planted)
        for method in METHODS:
            response = getattr(client, method)(url, {}, format="json")
            body = response.content.decode("utf-8", "replace")
            if PLANTED in body:
                problems.append(f"{method.upper()} {url} leaked stored data")
            if template in PUBLIC:
                continue
            if response.status_code != 401:
                problems.append(f"{method.upper()} {url} answered {response.status_code}, not 401")
    return problems


def test_every_url_refuses_a_request_without_a_token(planted):
    assert _walk(APIClient(), planted) == []


def test_every_url_refuses_a_revoked_or_malformed_token(planted):
    _, secret = auth.token_create(name="leaver")
    auth.token_revoke(name="leaver")
    revoked = APIClient()
    revoked.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert _walk(revoked, planted) == []
    garbage = APIClient()
    garbage.credentials(HTTP_AUTHORIZATION="Bearer winni_" + "A" * 43)
    assert _walk(garbage, planted) == []


def test_admin_pages_need_a_staff_login(client, planted):
    urls = [reverse("admin:index")]
    for model in admin.site._registry:
        meta = model._meta
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_add"))
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[planted]))
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_delete", args=[planted]))
    urls.append(reverse("admin:app_list", args=["conversations"]))
    get_user_model().objects.create_user("plain", password="pw-plain-123")  # logged in, not staff

    for who in ("anonymous", "not staff"):
        if who == "not staff":
            assert client.login(username="plain", password="pw-plain-123")
        for url in urls:
            response = client.get(url)
            assert response.status_code == 302 and "/admin/login/" in response["Location"], (who, url)
            assert client.post(url, {"session_id": "x"}).status_code == 302, (who, url)
    assert Conversation.objects.count() == 1


# --- MCP, through a real server -------------------------------------------------------------


def _rpc(url: str, method: str, params: dict, headers: dict) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    return httpx.post(url + "/mcp", json=body, headers={**base, **headers}, timeout=20)


@pytest.mark.live
def test_every_mcp_tool_refuses_a_missing_or_revoked_token(winni_server, mcp_legacy):
    tools = mcp_legacy.list_tools()
    assert "dewey_store_message" in tools
    _, revoked = auth.token_create(name="leaver")
    auth.token_revoke(name="leaver")
    for headers in ({}, {"authorization": f"Bearer {revoked}"}, {"authorization": "Basic YWxpY2U6cHc="}):
        for method in ("tools/list", "prompts/list", "resources/list"):
            assert _rpc(winni_server.url, method, {}, headers).status_code == 401, (method, headers)
        for tool in tools:
            response = _rpc(winni_server.url, "tools/call", {"name": tool, "arguments": {}}, headers)
            assert response.status_code == 401, (tool, headers, response.text[:200])
    assert Conversation.objects.count() == 0


@pytest.mark.live
def test_a_foreign_origin_is_refused_and_nothing_runs(winni_server, live_token):
    token = {"authorization": f"Bearer {live_token}"}
    call = {"name": "dewey_begin_conversation", "arguments": {"session_id": "from-evil"}}
    for origin in ("http://evil.example", "https://127.0.0.1.evil.example", "null"):
        response = _rpc(winni_server.url, "tools/call", call, {**token, "origin": origin})
        assert response.status_code == 403, (origin, response.status_code)
    assert Conversation.objects.count() == 0
    allowed = f"http://127.0.0.1:{winni_server.port}"
    assert allowed in settings.WINNI_ALLOWED_ORIGINS or _rpc(
        winni_server.url, "tools/list", {}, {**token, "origin": allowed}).status_code == 200


@pytest.mark.live
def test_sql_looking_input_is_stored_verbatim_and_harmless(mcp_legacy):
    cid = mcp_legacy.call("dewey_begin_conversation", {"session_id": SQLISH[0], "metadata": {"q": SQLISH[1]}})[
        "conversation_id"]
    for text in SQLISH:
        mcp_legacy.call("dewey_store_message", {"conversation_id": cid, "role": "user", "content": text})
    got = mcp_legacy.call("dewey_get_conversation", {"conversation_id": cid})
    assert [m["content"] for m in got["messages"]] == SQLISH
    assert got["session_id"] == SQLISH[0] and got["metadata"] == {"q": SQLISH[1]}
    for text in SQLISH:  # as ids, they are rejected as ids, not executed
        assert "conversation_id must be a UUID" in mcp_legacy.call_error("dewey_get_conversation",
                                                                          {"conversation_id": text})
    assert Message.objects.count() == len(SQLISH) and Conversation.objects.count() == 1


@pytest.mark.live
def test_oversized_input_is_refused_whole_and_writes_nothing(winni_server, mcp_legacy, live_token):
    cid = mcp_legacy.call("dewey_begin_conversation", {})["conversation_id"]
    too_big = "x" * (settings.WINNI_MAX_CONTENT_BYTES + 1)
    message = mcp_legacy.call_error("dewey_store_message", {"conversation_id": cid, "role": "user", "content": too_big})
    assert "content" in message and str(settings.WINNI_MAX_CONTENT_BYTES) in message
    rest = httpx.post(f"{winni_server.url}/api/v1/conversations/{cid}/messages/", timeout=30,
                      json={"role": "user", "content": too_big}, headers={"authorization": f"Bearer {live_token}"})
    assert rest.status_code == 413 and rest.json()["error"]["code"] == "too_large"
    huge_body = b'{"role": "user", "content": "' + b"y" * (settings.WINNI_MAX_REQUEST_BYTES + 10) + b'"}'
    body = httpx.post(f"{winni_server.url}/api/v1/conversations/{cid}/messages/", content=huge_body, timeout=30,
                      headers={"authorization": f"Bearer {live_token}", "content-type": "application/json"})
    assert body.status_code == 413 and "WINNI_MAX_REQUEST_BYTES" in body.json()["error"]["message"]
    assert Message.objects.count() == 0


# --- secrets never logged -------------------------------------------------------------------


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(JsonFormatter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def every_log_line():
    handler = _Capture()
    loggers = [logging.getLogger(name) for name in ("", "winni", "django", "django.request", "django.db.backends")]
    saved = [(lg, lg.level) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    yield handler.lines
    for lg, level in saved:
        lg.removeHandler(handler)
        lg.setLevel(level)


def test_secrets_never_reach_the_logs(db, every_log_line, capsys):
    from django.core.management import call_command

    call_command("winni_token", "create", "logged")
    secret = capsys.readouterr().out.strip()
    assert secret.startswith("winni_")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    cid = client.post("/api/v1/conversations/", {"session_id": "s"}, format="json").json()["conversation_id"]
    assert client.post(f"/api/v1/conversations/{cid}/messages/", {"role": "user", "content": "hi"},
                       format="json").status_code == 201
    wrong = "winni_" + uuid.uuid4().hex + uuid.uuid4().hex
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION=f"Bearer {wrong}")
    assert bad.get(f"/api/v1/conversations/{cid}/").status_code == 401
    call_command("winni_token", "revoke", "logged")
    assert client.get(f"/api/v1/conversations/{cid}/").status_code == 401

    text = "\n".join(every_log_line)
    assert "message.store" in text and "conversation.begin" in text  # the capture did see the app's lines
    assert secret not in text and wrong not in text
    assert secret[len("winni_"):][:20] not in text


@pytest.mark.live
def test_the_live_server_log_holds_no_token(winni_server, mcp_legacy, live_token):
    mcp_legacy.call("dewey_begin_conversation", {})
    _rpc(winni_server.url, "tools/list", {}, {"authorization": "Bearer winni_wrong_" + "z" * 30})
    log = json.dumps(open(winni_server.log.name, "rb").read().decode("utf-8", "replace"))
    assert live_token not in log and "winni_wrong_" not in log


def test_numbers_beyond_the_database_range_are_a_400_not_a_500(api):
    """Found by fuzzing: an offset beyond bigint reached PostgreSQL and came back as a 500."""
    huge = 2387179316432562719639805624320
    response = api.get(f"/api/v1/conversations/?offset={huge}")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid"


@pytest.mark.live
def test_numbers_beyond_the_database_range_are_a_tool_error(mcp_legacy):
    if "dewey_list_conversations" not in mcp_legacy.list_tools():
        pytest.skip("no dewey_list_conversations")
    message = mcp_legacy.call_error("dewey_list_conversations", {"offset": 2**70})
    assert "out of range" in message or "offset" in message
