import json
import logging

import pytest
from django.core.management import CommandError, call_command

from conversations import services
from core.logs import JsonFormatter, RequestIdFilter, request_id_var
from winni_site.models import ApiToken

pytestmark = pytest.mark.django_db


def test_each_storage_operation_logs_one_json_line_with_the_request_id(caplog):
    token = request_id_var.set("req-42")
    try:
        with caplog.at_level(logging.INFO, logger="winni.storage"):
            conversation = services.conversation_begin(session_id="s")
            services.message_store(conversation_id=conversation.id, role="user", content="secret words")
    finally:
        request_id_var.reset(token)
    records = [r for r in caplog.records if r.name == "winni.storage"]
    assert [r.fields["op"] for r in records] == ["conversation.begin", "message.store"]
    formatter, flt = JsonFormatter(), RequestIdFilter()
    request_id_var.set("req-42")
    flt.filter(records[1])
    line = json.loads(formatter.format(records[1]))
    assert line["request_id"] == "req-42"
    assert line["turn"] == 1 and line["duration_ms"] >= 0
    assert "secret words" not in formatter.format(records[1])  # content is never logged


def test_token_command_create_list_revoke(capsys):
    call_command("winni_token", "create", "ci")
    secret = capsys.readouterr().out.strip()
    assert secret.startswith("winni_")
    assert ApiToken.objects.get(name="ci").secret_sha256 != secret
    call_command("winni_token", "list")
    listing = capsys.readouterr().out
    assert "ci\tactive" in listing and secret not in listing
    call_command("winni_token", "revoke", "ci")
    assert ApiToken.objects.get(name="ci").is_revoked
    with pytest.raises(CommandError, match="already exists"):
        call_command("winni_token", "create", "ci")
    with pytest.raises(CommandError, match="no token"):
        call_command("winni_token", "revoke", "nobody")
    with pytest.raises(CommandError, match="name must be"):
        call_command("winni_token", "create", "bad name!")


@pytest.mark.django_db(transaction=True)
def test_the_mcp_token_check_survives_a_dropped_connection():
    """The MCP token check keeps its thread's connection without a health check before each call;
    when the database dropped it (a restart), the check reconnects and still answers."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    from winni_site import auth

    _, secret = auth.token_create(name="agent")
    answers: list[str | None] = []
    backends: list[int] = []

    def check() -> None:
        granted = auth._verify_sync(secret)  # the token's access (core.access)
        answers.append(granted.token if granted else None)
        backends.append(connection.connection.info.backend_pid)

    with ThreadPoolExecutor(max_workers=1) as pool:  # one thread, so its connection is reused
        pool.submit(check).result()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [backends[0]])
        pool.submit(check).result()
        pool.submit(lambda: connection.close()).result()  # this thread's connection, not the test's
    assert answers == ["agent", "agent"] and backends[0] != backends[1]


@pytest.mark.django_db
def test_the_mcp_token_check_reads_what_the_rest_check_reads():
    """The MCP token check reads a token and its projects in one query; it grants what the REST
    check (token_authenticate + token_access) grants, marks the token used, and refuses a
    revoked, unknown or malformed secret."""
    from core.projects import project_create
    from winni_site import auth

    alpha, beta = project_create(name="alpha"), project_create(name="beta")
    _, everywhere = auth.token_create(name="everywhere", scope="read")
    _, limited = auth.token_create(name="limited", projects=["beta", "alpha"])
    for secret in (everywhere, limited):
        token = auth.token_authenticate(secret)
        assert auth._verify_sync(secret) == auth.token_access(token)
    granted = auth._verify_sync(limited)
    assert granted.project_ids == {alpha.pk, beta.pk} and granted.project_slugs == ("alpha", "beta")
    assert auth._verify_sync(everywhere).project_ids is None
    ApiToken.objects.update(last_used_at=None)
    auth._verify_sync(limited)
    assert ApiToken.objects.get(name="limited").last_used_at is not None
    assert ApiToken.objects.get(name="everywhere").last_used_at is None
    auth.token_revoke(name="limited")
    assert auth._verify_sync(limited) is None
    assert auth._verify_sync(limited[:-1] + "x") is None and auth._verify_sync("not-a-token") is None
