"""Security walk: every URL pattern (from the resolver) and every MCP tool (from tools/list) is
tried without a token and with a revoked one, so endpoints added later are covered without
editing this file; and per token scope: a read token on every write, a token limited to one
project on every read with another project's rows planted. Plus: foreign Origin on /mcp, SQL-looking and oversized input, admin login,
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

from contexts import services as contexts_services
from conversations import services as conv
from conversations.models import Conversation, Message
from core import projects as core_projects
from core.logs import JsonFormatter
from medallions import services as medallion_services
from memory import services as memory_services
from memory.librarian import services as librarian_services
from tests.medallion_support import document
from tests.support import McpClient, result_text
from winni_site import auth

PLANTED = "planted-secret-content-7f3a"
# Open by design, and they read no stored data: checked for the planted content instead.
PUBLIC = {"healthz", "api/schema/", "api/docs/", "api/redoc/", "", "favicon.ico"}  # "" and favicon redirect
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


# --- scoped tokens: every URL and every tool, for each scope ------------------------------------


OTHER = "planted-other-project-4b1d"  # in project beta only; a token limited to alpha must never see it
MINE = "planted-own-project-9c2e"
WORD = "zebracorn"  # in every planted row of both projects: what the searches look for (a query is echoed)
# Methods views declare as reads although they are not GET (searches with a JSON body), and the
# name of the field that carries their query text.
READ_POSTS = {"api/v1/recall": "query", "api/v1/memories/search": "query", "api/v1/recall/context": "prompt",
              "api/v1/cache/ask": "query"}
UNSAFE = ["post", "put", "patch", "delete"]
# Every method needs an admin token.
ADMIN_URLS = {"api/v1/tokens/", "api/v1/tokens/<str:name>/", "api/v1/export", "api/v1/import"}


def _row_counts() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                       "AND table_type = 'BASE TABLE' AND table_name NOT LIKE 'django_%%'")
        tables = sorted(row[0] for row in cursor.fetchall())
        counts = {}
        for table in tables:
            cursor.execute(f'SELECT count(*) FROM "{table}"')
            counts[table] = cursor.fetchone()[0]
    return counts


def _plant(project: object, marker: str) -> dict[str, str]:
    """One row of every store in `project`, each holding `marker`; their ids."""
    slug = project.slug  # type: ignore[attr-defined]
    conversation = conv.conversation_begin(session_id=f"s-{marker}", project=project)
    conv.message_store(conversation_id=conversation.id, role="user", content=f"{marker} {WORD} deploy notes")
    memory, _ = memory_services.memory_store(content=f"{marker} is the {WORD} release codename", project=project)
    medallion = medallion_services.medallion_create(document=document(
        scope={"graph_nodes": [f"repo:{slug}"], "tags": ["project_state"]},
        summary={"high_level": f"{marker} {WORD} medallion", "subsystems": []}))
    contexts_services.context_set(name=f"ctx-{slug}", content=f"{marker} {WORD} context", actor="t", project=project)
    librarian_services.librarian_remember(query=f"what is {WORD}", answer=f"{marker} answer", project=project)
    fiedler = conv.fiedler_result_store(correlation_id=f"corr-{slug}", model="m", output=f"{marker} {WORD} output",
                                        conversation_id=str(conversation.id))
    return {"conversation": str(conversation.id), "memory": str(memory.pk), "medallion": str(medallion.pk),
            "context": f"ctx-{slug}", "slug": slug, "correlation": fiedler.correlation_id}


@pytest.fixture
def two_projects(db):
    alpha = core_projects.project_create(name="alpha")
    beta = core_projects.project_create(name="beta")
    return _plant(alpha, MINE), _plant(beta, OTHER)


def _client(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def test_a_read_token_is_refused_every_write_with_403_and_nothing_is_written(planted):
    _, secret = auth.token_create(name="reader", scope="read")
    client = _client(secret)
    before = _row_counts()
    problems = []
    for template in _route_patterns():
        if template in PUBLIC or not template.startswith("api/"):
            continue
        url = _concrete(template, planted)
        for method in UNSAFE:
            if method == "post" and template.rstrip("/") in READ_POSTS:
                continue
            response = getattr(client, method)(url, {"content": PLANTED}, format="json")
            if response.status_code != 403:
                problems.append(f"{method.upper()} {url} answered {response.status_code}, not 403")
            elif response.json()["error"]["code"] != "forbidden" or "has scope read" not in response.json()["error"]["message"]:
                problems.append(f"{method.upper()} {url}: {response.json()}")
        admin_only = template in ADMIN_URLS
        if (client.get(url).status_code == 403) != admin_only:
            problems.append(f"GET {url}: a read token {'got' if admin_only else 'was refused'} an "
                            f"{'admin' if admin_only else 'ordinary'} read")
    assert problems == []
    after = _row_counts()
    assert {k: v for k, v in after.items() if k != "winni_site_apitoken"} == {
        k: v for k, v in before.items() if k != "winni_site_apitoken"}
    for url, field in READ_POSTS.items():
        assert client.post(f"/{url}", {field: "deploy"}, format="json").status_code == 200


def _walk_reads(client: APIClient, ids: dict[str, str]) -> list[str]:
    """Every GET (and read POST) with each of another project's ids and its marker as the query."""
    leaks = []
    params = {"query": WORD, "q": WORD, "text": WORD, "correlation_id": ids["correlation"]}
    for template in _route_patterns():
        if not template.startswith("api/v1/"):
            continue
        for key in ("conversation", "memory", "medallion", "context", "slug"):
            url = _concrete(template, ids[key])
            response = client.get(url, params)
            if OTHER in response.content.decode("utf-8", "replace"):
                leaks.append(f"GET {url}")
            if template.rstrip("/") in READ_POSTS:
                response = client.post(url, {READ_POSTS[template.rstrip("/")]: WORD}, format="json")
                if OTHER in response.content.decode("utf-8", "replace"):
                    leaks.append(f"POST {url}")
    return leaks


def test_a_project_token_finds_nothing_of_another_project_on_any_url(two_projects):
    mine, other = two_projects
    _, secret = auth.token_create(name="alpha-bot", projects=["alpha"])
    client = _client(secret)
    assert _walk_reads(client, other) == []
    # Its own project's rows it does see.
    assert MINE in client.get("/api/v1/conversations/").content.decode()
    assert MINE in client.get(f"/api/v1/conversations/{mine['conversation']}/").content.decode()
    assert client.get(f"/api/v1/conversations/{other['conversation']}/").status_code == 404


def test_a_project_token_cannot_write_into_another_project(two_projects):
    mine, other = two_projects
    _, secret = auth.token_create(name="alpha-bot", projects=["alpha"])
    client = _client(secret)
    before = _row_counts()
    into_other = client.post(f"/api/v1/conversations/{other['conversation']}/messages/",
                             {"role": "user", "content": "x"}, format="json")
    assert into_other.status_code == 404
    memory = client.post("/api/v1/memories/", {"content": "x", "project": "beta"}, format="json")
    assert memory.status_code == 403 and memory.json()["error"]["code"] == "forbidden"
    assert "alpha" in memory.json()["error"]["message"]
    assert client.delete(f"/api/v1/memories/{other['memory']}/").status_code == 404
    assert client.delete(f"/api/v1/conversations/{other['conversation']}/?force=true").status_code == 404
    assert _row_counts() == before
    # Without a project, a write goes into the token's only project.
    made = client.post("/api/v1/memories/", {"content": "a new alpha fact"}, format="json")
    assert made.status_code == 201 and made.json()["project"] == "alpha"


# Sample arguments of every MCP tool (a new tool must be added here: the walk fails otherwise).
WRITE_TOOLS = {
    "dewey_begin_conversation": {},
    "dewey_store_message": {"conversation_id": "{conversation}", "role": "user", "content": "x"},
    "dewey_store_messages_bulk": {"messages": [{"role": "user", "content": "x"}]},
    "dewey_delete_conversation": {"conversation_id": "{conversation}", "force": True},
    "dewey_store_fiedler_result": {"correlation_id": "c", "model": "m", "output": "x"},
    "store_memory": {"content": "a fact"},
    "update_memory": {"memory_id": "{memory}", "content": "a changed fact"},
    "dewey_set_startup_context": {"name": "n", "content": "c"},
    "dewey_delete_startup_context": {"name": "{context}", "force": True},
    "medallion_checkpoint_session": {"scope": {"graph_nodes": ["repo:{slug}"], "tags": []}},
    "librarian_remember": {"query": "q", "answer": "a"},
    "librarian_forget": {"query": "what is zebracorn"},
    "librarian_feedback": {"query": "what is zebracorn", "helpful": False},
    "winni_item_confirm": {"item": "memory:{memory}"},
}
READ_TOOLS = {
    "dewey_get_conversation": {"conversation_id": "{conversation}"},
    "dewey_list_conversations": {},
    "dewey_search": {"query": "zebracorn"},
    "dewey_get_fiedler_results": {"correlation_id": "{correlation}"},
    "dewey_query_fiedler_results": {"text": "zebracorn"},
    "search_memory": {"query": "zebracorn release codename"},
    "memory_history": {"memory_id": "{memory}"},
    "dewey_get_startup_context": {"name": "{context}", "project": "{slug}"},
    "dewey_list_startup_contexts": {"include_content": True},
    "medallion_load_for_scope": {"scope": {"graph_nodes": ["repo:{slug}"], "tags": []}, "as_text": True},
    "medallion_get": {"medallion_id": "{medallion}"},
    "medallion_job_status": {"job_id": str(uuid.UUID(int=1))},
    "librarian_memory_stats": {},
    "librarian_ask": {"query": "what is zebracorn"},
    "winni_recall": {"query": "zebracorn"},
    "winni_get": {"kind": "memory", "id": "{memory}"},
    "winni_context": {"prompt": "what is the zebracorn release codename"},
    "winni_projects": {},
}


def _fill(value: object, ids: dict[str, str], marker: str) -> object:
    if isinstance(value, str):
        return value.format(marker=marker, **ids)
    if isinstance(value, dict):
        return {key: _fill(item, ids, marker) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, ids, marker) for item in value]
    return value


@pytest.mark.live
def test_every_mcp_tool_by_scope(winni_server, transactional_db):
    alpha = core_projects.project_create(name="alpha")
    beta = core_projects.project_create(name="beta")
    mine, other = _plant(alpha, MINE), _plant(beta, OTHER)
    _, reader = auth.token_create(name="reader", scope="read")
    _, limited = auth.token_create(name="alpha-bot", projects=["alpha"])
    read_client, alpha_client = McpClient(winni_server.url, reader), McpClient(winni_server.url, limited)
    tools = set(read_client.list_tools())
    assert tools == set(WRITE_TOOLS) | set(READ_TOOLS), "every tool needs sample arguments here"

    before = _row_counts()
    for tool, arguments in WRITE_TOOLS.items():
        message = read_client.call_error(tool, _fill(arguments, mine, MINE))
        assert "forbidden" in message and "scope read" in message, (tool, message)
    assert {k: v for k, v in _row_counts().items() if k != "winni_site_apitoken"} == {
        k: v for k, v in before.items() if k != "winni_site_apitoken"}
    for tool, arguments in READ_TOOLS.items():
        result = read_client.call_raw(tool, _fill(arguments, mine, MINE))
        assert not result.is_error or "not found" in result_text(result), (tool, result_text(result))

    leaks = []
    for tool, arguments in READ_TOOLS.items():
        result = alpha_client.call_raw(tool, _fill(arguments, other, OTHER))
        if OTHER in result_text(result) or OTHER in json.dumps(result.structured_content or {}):
            leaks.append(tool)
    resources = alpha_client._run(lambda c: c.list_resources())
    assert OTHER not in json.dumps(resources.model_dump(mode="json"))
    for uri in (f"winni://contexts/{other['context']}", f"winni://medallions/{other['medallion']}"):
        try:
            text = json.dumps(alpha_client._run(lambda c, uri=uri: c.read_resource(uri)).model_dump(mode="json"))
        except Exception as exc:  # noqa: BLE001 - an error is what a stranger's row should give
            text = str(exc)
        if OTHER in text:
            leaks.append(uri)
    prompt = alpha_client._run(lambda c: c.get_prompt("startup_context"))
    if OTHER in json.dumps(prompt.model_dump(mode="json")):
        leaks.append("prompt startup_context")
    assert leaks == []

    before = _row_counts()
    for tool in ("dewey_store_message", "dewey_delete_conversation", "medallion_checkpoint_session",
                 "dewey_delete_startup_context"):
        message = alpha_client.call_error(tool, _fill(WRITE_TOOLS[tool], other, OTHER))
        assert "not_found" in message or "forbidden" in message, (tool, message)
    message = alpha_client.call_error("store_memory", {"content": "x", "project": "beta"})
    assert "forbidden" in message and "alpha" in message
    assert {k: v for k, v in _row_counts().items() if k != "winni_site_apitoken"} == {
        k: v for k, v in before.items() if k != "winni_site_apitoken"}
    assert alpha_client.call("store_memory", {"content": "an alpha fact"})["project"] == "alpha"


@pytest.mark.parametrize("arguments, message", [
    (["--scope", "superuser"], "scope must be one of read, write, admin"),
    (["--project", "nope"], "no project named 'nope'"),
    (["--scope", "read", "--project", "alpha", "--project", "nope"], "no project named 'nope'"),
])
def test_winni_token_create_refuses_bad_input_and_creates_nothing(db, arguments, message):
    from django.core.management import CommandError, call_command

    core_projects.project_create(name="alpha")
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("winni_token", "create", "bot", *arguments)
    assert not auth.ApiToken.objects.exists()


def test_winni_token_create_with_scope_and_projects(db, capsys):
    from django.core.management import call_command

    core_projects.project_create(name="alpha")
    call_command("winni_token", "create", "ci", "--scope", "read", "--project", "alpha")
    captured = capsys.readouterr()
    assert captured.out.strip().startswith("winni_") and "scope read, alpha" in captured.err
    call_command("winni_token", "list")
    assert "ci\tactive\tread\tprojects alpha" in capsys.readouterr().out


def test_only_an_admin_token_manages_tokens_over_the_api(db):
    core_projects.project_create(name="alpha")
    _, writer = auth.token_create(name="writer")
    _, boss = auth.token_create(name="boss", scope="admin")
    for secret in (writer,):
        client = _client(secret)
        assert client.get("/api/v1/tokens/").status_code == 403
        refused = client.post("/api/v1/tokens/", {"name": "sneaky", "scope": "admin"}, format="json")
        assert refused.status_code == 403 and "scope admin" in refused.json()["error"]["message"]
    admin_client = _client(boss)
    made = admin_client.post("/api/v1/tokens/", {"name": "ci", "scope": "read", "projects": ["alpha"]}, format="json")
    assert made.status_code == 201 and made.json()["secret"].startswith("winni_")
    assert made.json()["scope"] == "read" and made.json()["projects"] == ["alpha"]
    bad = admin_client.post("/api/v1/tokens/", {"name": "x", "scope": "root"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["message"] == "scope: must be one of 'read', 'write' or 'admin', got 'root'"
    unknown = admin_client.post("/api/v1/tokens/", {"name": "y", "projects": ["nope"]}, format="json")
    assert unknown.status_code == 404 and "no project named 'nope'" in unknown.json()["error"]["message"]
    assert not auth.ApiToken.objects.filter(name__in=["sneaky", "x", "y"]).exists()
    names = [t["name"] for t in admin_client.get("/api/v1/tokens/").json()["tokens"]]
    assert names == ["boss", "ci", "writer"]
    assert admin_client.delete("/api/v1/tokens/writer/").json()["active"] is False
    assert _client(writer).get("/api/v1/conversations/").status_code == 401


def test_only_an_admin_token_exports_and_imports_over_the_api(planted):
    _, writer = auth.token_create(name="writer")
    _, boss = auth.token_create(name="boss", scope="admin")
    assert _client(writer).post("/api/v1/export", {}, format="json").status_code == 403
    assert _client(writer).post("/api/v1/import", {"name": "x"}, format="json").status_code == 403
    admin_client = _client(boss)
    made = admin_client.post("/api/v1/export", {"stores": ["conversations"]}, format="json")
    assert made.status_code == 201, made.content
    assert made.json()["manifest"]["stores"]["conversations"]["rows"]
    for name in ("../../etc", "/etc", "nope"):
        refused = admin_client.post("/api/v1/import", {"name": name}, format="json")
        assert refused.status_code == 404 and refused.json()["error"]["fields"] == {} or "name" in refused.json()["error"]["message"]
    again = admin_client.post("/api/v1/import", {"name": made.json()["name"]}, format="json")
    assert again.status_code == 200, again.content
    assert Conversation.objects.count() == 1  # already there: nothing added twice


@pytest.mark.live
def test_scopes_hold_through_the_live_asgi_server(winni_server, transactional_db):
    """The token's access is set inside the view and forgotten after the request under uvicorn too
    (ASGI runs the sync middleware and view through asgiref's thread hand-offs)."""
    alpha = core_projects.project_create(name="alpha")
    beta = core_projects.project_create(name="beta")
    _plant(alpha, MINE)
    _plant(beta, OTHER)
    _, reader = auth.token_create(name="reader", scope="read")
    _, limited = auth.token_create(name="alpha-bot", projects=["alpha"])
    _, writer = auth.token_create(name="writer")
    url = f"{winni_server.url}/api/v1/conversations/"

    def call(method: str, secret: str, **kwargs: object) -> httpx.Response:
        return httpx.request(method, url, headers={"authorization": f"Bearer {secret}"}, timeout=30, **kwargs)

    for _ in range(3):  # the same worker threads serve every token in turn
        refused = call("POST", reader, json={})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
        assert call("GET", reader).status_code == 200
        assert OTHER not in call("GET", limited).text and MINE in call("GET", limited).text
        everything = call("GET", writer).text
        assert OTHER in everything and MINE in everything


def test_a_read_tokens_ask_is_answered_and_records_nothing(two_projects):
    from memory.librarian.models import LibrarianHourlyStats, QueryMemory

    _, reader = auth.token_create(name="reader", scope="read")
    _, limited_reader = auth.token_create(name="alpha-reader", scope="read", projects=["alpha"])
    before = list(QueryMemory.objects.order_by("pk").values_list("pk", "ask_count", "cache_hits", "last_asked"))
    stats = list(LibrarianHourlyStats.objects.values_list("asks", flat=True))
    hit = _client(reader).post("/api/v1/cache/ask", {"query": "what is zebracorn", "project": "alpha"}, format="json")
    assert hit.status_code == 200 and hit.json()["cached"] is True and MINE in hit.json()["answer"]
    miss = _client(reader).post("/api/v1/cache/ask", {"query": "which release codename"}, format="json")
    assert miss.status_code == 200 and miss.json()["cached"] is False
    own = _client(limited_reader).post("/api/v1/cache/ask", {"query": "what is zebracorn"}, format="json")
    assert own.status_code == 200 and MINE in own.json()["answer"] and OTHER not in own.text
    assert list(QueryMemory.objects.order_by("pk").values_list("pk", "ask_count", "cache_hits", "last_asked")) == before
    assert list(LibrarianHourlyStats.objects.values_list("asks", flat=True)) == stats
