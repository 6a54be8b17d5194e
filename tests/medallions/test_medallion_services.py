"""The medallion store through its services: schema validation, revisions, scope queries."""
import json

import pytest
from django.db import connection

from core.errors import InvalidInput, NotFound, PayloadTooLarge
from core.searchable import get as searchable
from core.searchable import searchable_changed
from medallions import schema, services
from medallions.models import Medallion, MedallionRevision
from tests.medallion_support import SCOPE, document
from winni_client.schema import SCHEMA

pytestmark = pytest.mark.django_db


def test_create_get_round_trip_keeps_every_field():
    created = services.medallion_create(document=document(), actor="alice")
    got = services.medallion_get(medallion_id=str(created.id)).document()
    assert got["scope"] == SCOPE
    assert got["meta"]["schema_version"] == schema.SCHEMA_VERSION
    assert got["meta"]["status"] == "active"
    assert got["decisions"] == document()["decisions"]
    assert got["open_questions"] == document()["open_questions"]
    assert got["summary"] == document()["summary"]
    assert got["meta"]["created_at"] == got["meta"]["updated_at"]
    # Human-inspectable: plain JSON all the way down.
    assert json.loads(json.dumps(got)) == got


def test_defaults_fill_optional_fields():
    created = services.medallion_create(document={"scope": SCOPE, "summary": {}})
    doc = created.document()
    assert doc["decisions"] == [] and doc["open_questions"] == []
    assert doc["affordances"] == {"recommended_entry_points": [], "avoid_repeating": [], "invariants": []}


@pytest.mark.parametrize("bad, path", [
    ({"decisions": [{"id": "D-1", "statement": "x", "confidence": 1.5}]}, "decisions[0].confidence"),
    ({"decisions": [{"id": "D-1", "statement": "", "confidence": 0.5}]}, "decisions[0].statement"),
    ({"open_questions": [{"id": "Q-1", "question": "x", "priority": "urgent"}]}, "open_questions[0].priority"),
    ({"summary": {"high_level": "x", "subsystems": [{"name": "a", "status": "done"}]}}, "summary.subsystems[0].status"),
    ({"affordances": {"invariants": [3]}}, "affordances.invariants[0]"),
    ({"surprise": 1}, "surprise"),
    ({"scope": {"graph_nodes": ["ok", 7], "tags": []}}, "scope.graph_nodes[1]"),
    ({"scope": {"graph_nodes": [], "tags": [None]}}, "scope.tags[0]"),
    ({"meta": {"status": "deleted"}}, "meta.status"),
    ({"meta": {"id": "not-a-uuid"}}, "meta.id"),
])
def test_schema_violations_name_the_json_path_and_write_nothing(bad, path):
    with pytest.raises(InvalidInput) as error:
        services.medallion_create(document=document(**bad))
    assert error.value.field == path
    assert error.value.message.startswith(path)
    assert Medallion.objects.count() == 0


def test_it_rejects_a_document_that_is_not_an_object_or_too_big(settings):
    with pytest.raises(InvalidInput):
        services.medallion_create(document=["x"])
    settings.WINNI_MAX_CONTENT_BYTES = 2000
    with pytest.raises(PayloadTooLarge):
        services.medallion_create(document=document(summary={"high_level": "x" * 3000}))
    assert Medallion.objects.count() == 0


def test_update_keeps_created_at_and_a_revision():
    created = services.medallion_create(document=document())
    changed = document(decisions=[{"id": "D-001", "statement": "Use Python 3.12+", "confidence": 0.7,
                                   "status": "active"}])
    updated = services.medallion_update(medallion_id=created.id, document=changed, actor="bob")
    assert updated.created_at == created.created_at
    assert updated.updated_at > created.updated_at
    history = services.medallion_history(medallion_id=created.id)
    assert [(r.number, r.actor) for r in history] == [(1, "bob")]
    assert history[0].document["decisions"][0]["statement"] == "Use Python 3.11+"
    assert updated.document()["meta"]["id"] == str(created.id)


def test_invalid_update_changes_nothing():
    created = services.medallion_create(document=document())
    with pytest.raises(InvalidInput):
        services.medallion_update(medallion_id=created.id, document=document(decisions="nope"))
    assert MedallionRevision.objects.count() == 0
    assert Medallion.objects.get().decisions == document()["decisions"]


def test_unknown_and_malformed_ids_are_not_found():
    for bad in ("00000000-0000-0000-0000-000000000000", "nope"):
        with pytest.raises(NotFound):
            services.medallion_get(medallion_id=bad)
        with pytest.raises(NotFound):
            services.medallion_update(medallion_id=bad, document=document())
        with pytest.raises(NotFound):
            services.medallion_history(medallion_id=bad)


def test_every_update_keeps_a_revision_in_order():
    created = services.medallion_create(document=document())
    for n in range(3):
        services.medallion_update(medallion_id=created.id, document=document(summary={"high_level": f"v{n}"}))
    numbers = [r.number for r in services.medallion_history(medallion_id=created.id)]
    assert numbers == [3, 2, 1]
    assert services.medallion_get(medallion_id=created.id).summary["high_level"] == "v2"


def test_archive_keeps_a_revision_and_hides_it_from_loading():
    created = services.medallion_create(document=document())
    services.medallion_archive(medallion_id=created.id, actor="admin:root")
    assert services.medallion_get(medallion_id=created.id).status == "archived"
    assert services.load_medallions_for_scope(scope=SCOPE) == []
    assert len(services.medallions_latest_for_scope(scope=SCOPE, status=None)) == 1
    assert services.medallion_history(medallion_id=created.id)[0].operation == "archive"


def _make(nodes, tags=()):
    return services.medallion_create(document=document(scope={"graph_nodes": list(nodes), "tags": list(tags)}))


def _ids(found):
    return [str(m.id) for m in found]


def test_scope_queries_use_subset_semantics_newest_first():
    muse = _make(["repo:muse"])
    muse_cli = _make(["repo:muse", "module:cli"])
    other = _make(["repo:other"])
    tagged = _make(["repo:muse", "module:llm_router"], ["project_state"])
    q = services.medallions_latest_for_scope
    # Seed 004 US4-1: exact and superset matches, newest first.
    assert _ids(q(scope={"graph_nodes": ["repo:muse"], "tags": []}, limit=10)) == _ids([tagged, muse_cli, muse])
    # US2-3: a partial request matches a medallion with more nodes.
    assert _ids(q(scope={"graph_nodes": ["module:cli"]}, limit=10)) == _ids([muse_cli])
    # US4-2: tags only.
    assert _ids(q(scope={"graph_nodes": [], "tags": ["project_state"]}, limit=10)) == _ids([tagged])
    # Both axes must hold.
    assert q(scope={"graph_nodes": ["repo:other"], "tags": ["project_state"]}) == []
    # An empty scope matches everything (documented choice); limit applies.
    assert _ids(q(scope={"graph_nodes": [], "tags": []}, limit=2)) == _ids([tagged, other])
    # US2-4: nothing for an unknown scope.
    assert q(scope={"graph_nodes": ["repo:none"]}) == []
    # Updating moves a medallion to the front.
    services.medallion_update(medallion_id=muse.id, document=muse.document())
    assert _ids(q(scope={"graph_nodes": ["repo:muse"]}, limit=1)) == _ids([muse])


def test_scope_query_uses_the_gin_index():
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        sql, params = Medallion.objects.for_scope(graph_nodes=["repo:x"], tags=[]).query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("SET enable_seqscan = on")
    assert "medallion_graph_nodes" in plan


@pytest.mark.parametrize("scope, field", [
    ({"graph_nodes": "repo:x"}, "scope.graph_nodes"),
    ({"graph_nodes": [1]}, "scope.graph_nodes[0]"),
    ({"tags": ["ok", ""]}, "scope.tags[1]"),
    ({"nodes": ["x"]}, "scope.nodes"),
    ("repo:x", "scope"),
])
def test_bad_scopes_name_the_field(scope, field):
    with pytest.raises(InvalidInput) as error:
        services.medallions_latest_for_scope(scope=scope)
    assert error.value.field == field


def test_bad_limit_status_offset():
    for kwargs, field in (({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"status": "gone"}, "status"),
                          ({"offset": -1}, "offset")):
        with pytest.raises(InvalidInput) as error:
            services.medallions_latest_for_scope(scope=SCOPE, **kwargs)
        assert error.value.field == field


def test_text_is_searchable_and_announced(django_capture_on_commit_callbacks):
    announced = []

    def receiver(sender, kind, ids, **kwargs):
        announced.append((kind, ids))

    searchable_changed.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            created = services.medallion_create(document=document())
    finally:
        searchable_changed.disconnect(receiver)
    assert announced == [("medallion", [created.id])]
    registered = searchable("medallion")
    assert registered.model is Medallion
    assert "Use Python 3.11+" in registered.text(created) and "async" in registered.text(created)
    from django.contrib.postgres.search import SearchQuery

    found = Medallion.objects.filter(search_vector=SearchQuery("asynchronous OR async", config="english",
                                                               search_type="websearch"))
    assert list(found) == [created]


def test_as_text_is_compact_markdown():
    text = services.medallion_as_text(services.medallion_create(document=document()))
    assert text.startswith("## Medallion: repo:muse, #project_state")
    assert "D-001 (0.90) Use Python 3.11+ — match types" in text
    assert "Q-001 [medium] Should we use async?" in text
    assert "Start from: muse/cli.py" in text


def test_the_client_bundles_the_served_schema():
    assert SCHEMA == schema.json_schema()


def test_delete_removes_revisions_too():
    created = services.medallion_create(document=document())
    services.medallion_update(medallion_id=created.id, document=document())
    services.medallion_delete(medallion_id=created.id, actor="admin:root")
    assert Medallion.objects.count() == 0 and MedallionRevision.objects.count() == 0
