"""Startup contexts: services, REST, admin; the concurrency rule (one active) against PostgreSQL."""
import hashlib
import threading

import pytest
from django.db import IntegrityError, connection, transaction

from contexts import services
from contexts.models import StartupContext, StartupContextAudit
from core.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge

pytestmark = pytest.mark.django_db


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def active_names() -> list[str]:
    return list(StartupContext.objects.filter(is_active=True).values_list("name", flat=True))


def test_set_creates_activates_and_switches_the_active_context():
    assert services.context_get() is None
    first = services.context_set(name="alpha", content="# Alpha", actor="alice")
    assert first.is_active and services.context_get().name == "alpha"
    services.context_set(name="beta", content="# Beta", actor="bob")
    assert active_names() == ["beta"]
    services.context_set(name="gamma", content="# Gamma", set_active=False, actor="alice")
    assert active_names() == ["beta"]
    services.context_activate(name="alpha", actor="carol")
    assert active_names() == ["alpha"]
    assert services.context_get(name="gamma").content == "# Gamma"


def test_update_keeps_created_at_and_set_active_false_deactivates():
    created = services.context_set(name="alpha", content="one", actor="alice")
    updated = services.context_set(name="alpha", content="two", actor="alice")
    assert updated.pk == created.pk and updated.created_at == created.created_at
    assert updated.updated_at > created.updated_at and updated.content == "two"
    services.context_set(name="alpha", content="two", set_active=False, actor="alice")
    assert services.context_get() is None


def test_every_write_is_audited_with_actor_and_hashes():
    services.context_set(name="alpha", content="one", actor="alice")
    services.context_set(name="alpha", content="two", actor="bob")
    services.context_set(name="beta", content="b", actor="bob")  # deactivates alpha
    services.context_activate(name="alpha", actor="carol")
    services.context_delete(name="alpha", force=True, actor="dave")
    rows = [(r.action, r.actor, r.sha256_before, r.sha256_after) for r in reversed(services.context_audit(name="alpha"))]
    assert rows == [
        ("create", "alice", "", sha("one")),
        ("activate", "alice", sha("one"), sha("one")),
        ("update", "bob", sha("one"), sha("two")),
        ("deactivate", "bob", sha("two"), sha("two")),
        ("activate", "carol", sha("two"), sha("two")),
        ("delete", "dave", sha("two"), ""),
    ]


@pytest.mark.parametrize(
    ("kwargs", "error", "field"),
    [
        ({"name": "", "content": "x"}, InvalidInput, "name"),
        ({"name": "   ", "content": "x"}, InvalidInput, "name"),
        ({"name": "n" * 201, "content": "x"}, InvalidInput, "name"),
        ({"name": "ok", "content": " \n"}, InvalidInput, "content"),
        ({"name": "ok", "content": "x" * (1024 * 1024 + 1)}, PayloadTooLarge, "content"),
        ({"name": "ok", "content": "nul \x00 inside"}, InvalidInput, "content"),
        ({"name": "a\x00b", "content": "x"}, InvalidInput, "name"),
    ],
)
def test_bad_input_names_the_field_and_writes_nothing(kwargs, error, field):
    with pytest.raises(error) as caught:
        services.context_set(actor="alice", **kwargs)
    assert caught.value.field == field
    assert field in caught.value.message
    assert StartupContext.objects.count() == 0 and StartupContextAudit.objects.count() == 0


def test_delete_needs_force_and_missing_names_are_not_found():
    services.context_set(name="alpha", content="x", actor="alice")
    with pytest.raises(InvalidInput) as caught:
        services.context_delete(name="alpha", actor="alice")
    assert caught.value.field == "force"
    assert active_names() == ["alpha"]
    with pytest.raises(NotFound):
        services.context_delete(name="nope", force=True, actor="alice")
    with pytest.raises(NotFound):
        services.context_get(name="nope")
    with pytest.raises(NotFound):
        services.context_activate(name="nope", actor="alice")


def test_create_mode_refuses_a_duplicate_name_and_update_mode_a_missing_one():
    services.context_set(name="alpha", content="x", actor="alice")
    with pytest.raises(Conflict):
        services.context_set(name="alpha", content="y", actor="alice", mode="create")
    with pytest.raises(NotFound):
        services.context_set(name="beta", content="y", actor="alice", mode="update")
    assert services.context_get(name="alpha").content == "x"


def test_the_database_refuses_two_active_contexts_and_empty_names():
    services.context_set(name="alpha", content="x", actor="alice")
    with pytest.raises(IntegrityError), transaction.atomic():
        StartupContext.objects.create(name="beta", content="y", is_active=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        StartupContext.objects.create(name="", content="y")


@pytest.mark.django_db(transaction=True)
def test_ten_parallel_activations_leave_exactly_one_active():
    for i in range(10):
        services.context_set(name=f"ctx-{i}", content=f"content {i}", set_active=False, actor="setup")
    barrier = threading.Barrier(10)
    errors: list[BaseException] = []

    def activate(i: int) -> None:
        try:
            barrier.wait()
            services.context_set(name=f"ctx-{i}", content=f"content {i} v2", set_active=True, actor=f"w{i}")
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=activate, args=(i,)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(active_names()) == 1
    assert StartupContextAudit.objects.filter(action="activate").count() == 10


def test_rest_crud_activate_audit(api):
    created = api.post("/api/v1/contexts/", {"name": "alpha", "content": "# A", "set_active": True}, format="json")
    assert created.status_code == 201 and created.json()["is_active"] is True
    api.post("/api/v1/contexts/", {"name": "beta", "content": "# B"}, format="json")
    listed = api.get("/api/v1/contexts/").json()["contexts"]
    assert [(c["name"], c["is_active"], "content" in c) for c in listed] == [("alpha", True, False), ("beta", False, False)]
    assert api.get("/api/v1/contexts/?include_content=true").json()["contexts"][1]["content"] == "# B"
    assert api.get("/api/v1/contexts/active/").json()["name"] == "alpha"
    assert api.put("/api/v1/contexts/beta/", {"content": "# B2"}, format="json").json()["content"] == "# B2"
    assert api.post("/api/v1/contexts/beta/activate/").json()["is_active"] is True
    assert api.get("/api/v1/contexts/active/").json()["name"] == "beta"
    audit = api.get("/api/v1/contexts/beta/audit/").json()["audit"]
    assert [(a["action"], a["actor"]) for a in audit] == [("activate", "alice"), ("update", "alice"), ("create", "alice")]
    assert api.delete("/api/v1/contexts/beta/").status_code == 400
    assert api.delete("/api/v1/contexts/beta/?force=true").status_code == 204
    none_active = api.get("/api/v1/contexts/active/")
    assert none_active.status_code == 404 and none_active.json()["error"]["message"] == "no startup context is active"
    assert api.get("/api/v1/contexts/beta/").status_code == 404
    assert api.get("/api/v1/contexts/beta/audit/").json()["audit"][0]["action"] == "delete"


def test_rest_errors_name_the_field(api):
    empty = api.post("/api/v1/contexts/", {"name": " ", "content": "x"}, format="json")
    assert empty.status_code == 400 and "name" in empty.json()["error"]["fields"]
    api.post("/api/v1/contexts/", {"name": "alpha", "content": "x"}, format="json")
    dup = api.post("/api/v1/contexts/", {"name": "alpha", "content": "y"}, format="json")
    assert dup.status_code == 409 and "name" in dup.json()["error"]["fields"]
    big = api.post("/api/v1/contexts/", {"name": "big", "content": "x" * (1024 * 1024 + 1)}, format="json")
    assert big.status_code == 413
    missing = api.put("/api/v1/contexts/nope/", {"content": "x"}, format="json")
    assert missing.status_code == 404
    assert api.post("/api/v1/contexts/nope/activate/").status_code == 404
    assert StartupContext.objects.count() == 1 and services.context_get(name="alpha").content == "x"


def test_admin_edit_one_click_activate_and_audit_trail(client, staff_user):
    client.force_login(staff_user)
    response = client.post(
        "/admin/contexts/startupcontext/add/", {"name": "alpha", "content": "# Alpha", "is_active": "on"}
    )
    assert response.status_code == 302, response.content[:2000]
    services.context_set(name="beta", content="# Beta", set_active=False, actor="alice")
    beta = StartupContext.objects.get(name="beta")
    changelist = client.get("/admin/contexts/startupcontext/").content.decode()
    assert f"/admin/contexts/startupcontext/{beta.pk}/activate/" in changelist
    assert client.post(f"/admin/contexts/startupcontext/{beta.pk}/activate/").status_code == 302
    assert active_names() == ["beta"]
    assert client.get(f"/admin/contexts/startupcontext/{beta.pk}/activate/").status_code == 405
    page = client.get(f"/admin/contexts/startupcontext/{beta.pk}/change/").content.decode()
    assert "admin:root" in page and "activate" in page and sha("# Beta")[:12] in page
    alpha = StartupContext.objects.get(name="alpha")
    edited = client.post(f"/admin/contexts/startupcontext/{alpha.pk}/change/", {"content": "# Alpha 2", "is_active": "on"})
    assert edited.status_code == 302
    assert active_names() == ["alpha"] and services.context_get().content == "# Alpha 2"
    deleted = client.post(f"/admin/contexts/startupcontext/{alpha.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302
    assert [r.actor for r in services.context_audit(name="alpha")][0] == "admin:root"
    too_big = client.post("/admin/contexts/startupcontext/add/", {"name": "big", "content": "x" * (1024 * 1024 + 1)},
                          follow=True)
    assert "WINNI_MAX_CONTENT_BYTES" in too_big.content.decode()
    assert not StartupContext.objects.filter(name="big").exists()
    trail = client.get("/admin/contexts/startupcontextaudit/?q=alpha").content.decode()
    assert "delete" in trail and "admin:root" in trail
    assert client.get("/admin/contexts/startupcontextaudit/add/").status_code == 403


def test_writes_announce_the_changed_rows_to_the_search_pipeline(django_capture_on_commit_callbacks):
    from core import searchable

    seen: list[tuple[str, list]] = []

    def receiver(sender, kind, ids, **kwargs):
        seen.append((kind, ids))

    searchable.searchable_changed.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            alpha = services.context_set(name="alpha", content="Alpha text", actor="t")
        with django_capture_on_commit_callbacks(execute=True):
            beta = services.context_set(name="beta", content="Beta text", actor="t")
        with django_capture_on_commit_callbacks(execute=True):
            services.context_delete(name="alpha", force=True, actor="t")
    finally:
        searchable.searchable_changed.disconnect(receiver)
    assert seen == [("context", [alpha.pk]), ("context", [beta.pk, alpha.pk]), ("context", [alpha.pk])]
    registered = searchable.get("context")
    assert registered.model is StartupContext and "Beta text" in registered.text(beta)
    assert list(StartupContext.objects.filter(search_vector="beta").values_list("name", flat=True)) == ["beta"]
