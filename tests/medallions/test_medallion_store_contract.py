"""One contract for seed 004's MedallionStore, run against the SQLite store, the REST store
(Winni's real REST API served in-process through WSGI) and the server's own store."""
import time

import httpx
import pytest
from django.test import Client

from medallions.store import DjangoMedallionStore
from tests.medallion_support import SCOPE, document
from winni_client import (
    MedallionNotFoundError,
    MedallionValidationError,
    RestMedallionStore,
    SQLiteMedallionStore,
    checkpoint_session,
    load_medallions_for_scope,
)
from winni_site import auth


class DjangoTransport(httpx.BaseTransport):
    """httpx requests served in-process by Django's test client (inside the test's transaction):
    the whole REST stack (auth, serializers, views, error handler) without a socket."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = Client().generic(
            request.method, request.url.raw_path.decode(), data=request.read(),
            content_type=request.headers.get("content-type", ""),
            headers={"Authorization": request.headers["authorization"]},
        )
        return httpx.Response(response.status_code, headers=dict(response.headers), content=response.content)


@pytest.fixture(params=["sqlite", "server", "rest"])
def store(request, db, tmp_path):
    if request.param == "sqlite":
        sqlite = SQLiteMedallionStore(str(tmp_path / "medallions.db"))
        yield sqlite
        sqlite.close()
    elif request.param == "server":
        yield DjangoMedallionStore(actor="contract")
    else:
        _, secret = auth.token_create(name="contract")
        http = httpx.Client(transport=DjangoTransport(),
                            base_url="http://127.0.0.1/api/v1/", headers={"Authorization": f"Bearer {secret}"})
        yield RestMedallionStore("http://127.0.0.1", secret, http=http)
        http.close()


def _tick():
    # Timestamps must differ between writes for ordering assertions; a millisecond is plenty.
    time.sleep(0.002)


def test_create_then_get_by_id_preserves_everything(store):
    created = store.create(document())
    assert created["meta"]["status"] == "active"
    assert created["meta"]["schema_version"] == "1.0"
    got = store.get_by_id(created["meta"]["id"])
    assert got == created
    for section in ("scope", "summary", "decisions", "open_questions", "affordances"):
        assert got[section] == document()[section], section


def test_get_by_id_of_unknown_is_none(store):
    assert store.get_by_id("00000000-0000-0000-0000-000000000000") is None


def test_update_keeps_created_at_and_moves_updated_at(store):
    created = store.create(document())
    _tick()
    changed = {**created, "summary": {"high_level": "now async", "subsystems": []}}
    updated = store.update(changed)
    assert updated["meta"]["id"] == created["meta"]["id"]
    assert updated["meta"]["created_at"] == created["meta"]["created_at"]
    assert updated["meta"]["updated_at"] > created["meta"]["updated_at"]
    assert store.get_by_id(created["meta"]["id"])["summary"]["high_level"] == "now async"
    assert [r["summary"]["high_level"] for r in store.history(created["meta"]["id"])] == [
        "Muse is a CLI for music notes."]


def test_update_of_unknown_id_is_not_found(store):
    missing = document(meta={"id": "00000000-0000-0000-0000-000000000000"})
    with pytest.raises(MedallionNotFoundError):
        store.update(missing)


@pytest.mark.parametrize("bad, path", [
    ({"decisions": [{"id": "D-1", "statement": "x", "confidence": 2}]}, "decisions[0].confidence"),
    ({"scope": {"graph_nodes": [5], "tags": []}}, "scope.graph_nodes[0]"),
    ({"open_questions": [{"id": "Q", "question": "x", "priority": "now"}]}, "open_questions[0].priority"),
    ({"extra": True}, "extra"),
])
def test_schema_violations_are_refused_naming_the_path(store, bad, path):
    with pytest.raises(MedallionValidationError) as error:
        store.create(document(**bad))
    assert error.value.path == path
    assert store.get_latest_for_scope({"graph_nodes": [], "tags": []}, limit=10) == []


def test_latest_for_scope_subset_semantics_and_order(store):
    muse = store.create(document(scope={"graph_nodes": ["repo:muse"], "tags": []}))
    _tick()
    muse_cli = store.create(document(scope={"graph_nodes": ["repo:muse", "module:cli"], "tags": ["project_state"]}))
    _tick()
    store.create(document(scope={"graph_nodes": ["repo:other"], "tags": []}))
    ids = lambda found: [m["meta"]["id"] for m in found]  # noqa: E731
    assert ids(store.get_latest_for_scope({"graph_nodes": ["repo:muse"], "tags": []}, limit=5)) == [
        muse_cli["meta"]["id"], muse["meta"]["id"]]
    assert ids(store.get_latest_for_scope({"graph_nodes": [], "tags": ["project_state"]})) == [muse_cli["meta"]["id"]]
    assert len(store.get_latest_for_scope({"graph_nodes": [], "tags": []}, limit=2)) == 2
    assert store.get_latest_for_scope({"graph_nodes": ["repo:none"], "tags": []}) == []
    _tick()
    store.update(muse)
    assert ids(store.get_latest_for_scope({"graph_nodes": ["repo:muse"], "tags": []}, limit=1)) == [muse["meta"]["id"]]
    archived = store.update({**muse, "meta": {**muse["meta"], "status": "archived"}})
    assert archived["meta"]["status"] == "archived"
    assert ids(load_medallions_for_scope(store, {"graph_nodes": ["repo:muse"], "tags": []})) == [muse_cli["meta"]["id"]]
    assert len(store.get_latest_for_scope({"graph_nodes": ["repo:muse"], "tags": []}, status=None)) == 2


def test_bad_scope_is_refused(store):
    with pytest.raises(MedallionValidationError) as error:
        store.get_latest_for_scope({"graph_nodes": [1], "tags": []})
    assert error.value.path == "scope.graph_nodes[0]"


class ScriptedLLM:
    """A stand-in model for the generic helper: records which method ran."""

    def __init__(self, fail=False):
        self.calls, self.fail = [], fail

    def generate(self, scope, evidence):
        self.calls.append("generate")
        if self.fail:
            raise TimeoutError("model timed out")
        return {"summary": {"high_level": evidence["session_summary"]},
                "decisions": [{"id": "D-001", "statement": "Use Python 3.11+", "confidence": 0.8}]}

    def update(self, existing, new_evidence):
        self.calls.append("update")
        return {**{k: existing[k] for k in ("summary", "decisions", "open_questions", "affordances")},
                "summary": {"high_level": new_evidence["session_summary"], "subsystems": []}}


def test_generic_checkpoint_session_generates_then_updates(store):
    llm = ScriptedLLM()
    first = checkpoint_session(store, llm, SCOPE, {"session_summary": "day one"})
    _tick()
    second = checkpoint_session(store, llm, SCOPE, {"session_summary": "day two"})
    assert llm.calls == ["generate", "update"]
    assert second["meta"]["id"] == first["meta"]["id"]
    assert second["meta"]["created_at"] == first["meta"]["created_at"]
    assert second["meta"]["updated_at"] > first["meta"]["updated_at"]
    assert load_medallions_for_scope(store, SCOPE)[0]["summary"]["high_level"] == "day two"
    assert len(store.get_latest_for_scope(SCOPE, limit=10)) == 1


def test_generic_checkpoint_failure_stores_nothing(store):
    from winni_client import CheckpointError

    with pytest.raises(CheckpointError) as error:
        checkpoint_session(store, ScriptedLLM(fail=True), SCOPE, {"session_summary": "x"})
    assert (error.value.operation, error.value.scope) == ("generate", SCOPE)
    assert "timed out" in str(error.value)
    with pytest.raises(CheckpointError):
        checkpoint_session(store, ScriptedLLM(), {"graph_nodes": [], "tags": []}, {})
    assert store.get_latest_for_scope({"graph_nodes": [], "tags": []}) == []
