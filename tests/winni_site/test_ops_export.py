"""Export / import as JSON Lines: round trip with checksums, idempotent re-import, atomic per file,
and errors that name the file, the line and the field."""
from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest
from django.core.management import CommandError, call_command

from conversations import services as conv
from conversations.models import Conversation, Message
from core.errors import InvalidInput, NotFound
from winni_site import portable

pytestmark = pytest.mark.django_db

TRICKY = ["plain", "ünïcode ✓ 日本語", "'); DROP TABLE conversations_message; --", "line\nbreak\ttab \"quotes\""]


@pytest.fixture
def corpus():
    ids = []
    for n in range(3):
        conversation = conv.conversation_begin(session_id=f"s{n}", metadata={"n": n, "nested": {"k": [1, 2]}})
        for i, text in enumerate(TRICKY[: n + 2]):
            conv.message_store(conversation_id=conversation.id, role=["user", "assistant"][i % 2], content=text,
                               metadata={"i": i} if i else None,
                               created_at=dt.datetime(2026, 1, 1, 12, i, tzinfo=dt.timezone.utc).isoformat())
        ids.append(conversation.id)
    conv.conversation_begin(session_id=None)  # a conversation without messages
    return ids


def _snapshot():
    return (
        sorted(Conversation.objects.values_list("id", "session_id", "metadata", "created_at", "updated_at")),
        sorted(Message.objects.values_list("id", "conversation_id", "turn_number", "role", "content", "metadata",
                                           "created_at")),
    )


def _rewrite(folder, lines):
    """Replace conversations.jsonl and fix its checksum, as a hand-edited export would."""
    data = "".join(json.dumps(line) + "\n" for line in lines)
    (folder / "conversations.jsonl").write_text(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["stores"]["conversations"]["sha256"] = hashlib.sha256(data.encode()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_round_trip_through_an_empty_database_is_identical(corpus, tmp_path):
    before = _snapshot()
    first = portable.export_all(out=tmp_path / "a")
    entry = first["stores"]["conversations"]
    assert entry["rows"] == {"conversations.conversation": 4, "conversations.message": 9}
    assert entry["lines"] == 4
    assert entry["sha256"] == hashlib.sha256((tmp_path / "a" / "conversations.jsonl").read_bytes()).hexdigest()

    Conversation.objects.all().delete()
    assert Message.objects.count() == 0
    added = portable.import_all(folder=tmp_path / "a")
    assert added["conversations"] == {"conversations.conversation": 4, "conversations.message": 9}
    assert _snapshot() == before

    second = portable.export_all(out=tmp_path / "b")
    assert second["stores"] == first["stores"]
    assert (tmp_path / "a" / "conversations.jsonl").read_bytes() == (tmp_path / "b" / "conversations.jsonl").read_bytes()


def test_reimport_adds_nothing_and_fills_in_what_is_missing(corpus, tmp_path):
    portable.export_all(out=tmp_path)
    assert portable.import_all(folder=tmp_path)["conversations"] == {
        "conversations.conversation": 0, "conversations.message": 0}
    Message.objects.filter(conversation_id=corpus[2]).delete()
    assert portable.import_all(folder=tmp_path)["conversations"] == {
        "conversations.conversation": 0, "conversations.message": 4}


def test_a_bad_line_rolls_the_whole_file_back_and_is_named(corpus, tmp_path):
    portable.export_all(out=tmp_path)
    lines = [json.loads(raw) for raw in (tmp_path / "conversations.jsonl").read_text().splitlines()]
    Conversation.objects.all().delete()

    broken = json.loads(json.dumps(lines))
    bad = next(n for n, line in enumerate(broken) if n and line["messages"])
    broken[bad]["messages"][-1]["role"] = "wizard"  # violates the role CHECK constraint
    _rewrite(tmp_path, broken)
    with pytest.raises(InvalidInput, match=rf"conversations.jsonl line {bad + 1}: .*msg_role_valid"):
        portable.import_all(folder=tmp_path)
    assert Conversation.objects.count() == 0 and Message.objects.count() == 0

    broken = json.loads(json.dumps(lines))
    broken[1]["colour"] = "blue"
    _rewrite(tmp_path, broken)
    with pytest.raises(InvalidInput, match=r"line 2: unknown field 'colour'") as info:
        portable.import_all(folder=tmp_path)
    assert info.value.field == "colour"

    broken = json.loads(json.dumps(lines))
    broken[0]["created_at"] = "yesterday"
    _rewrite(tmp_path, broken)
    with pytest.raises(InvalidInput, match=r"line 1: created_at"):
        portable.import_all(folder=tmp_path)

    _rewrite(tmp_path, lines)
    (tmp_path / "conversations.jsonl").write_text((tmp_path / "conversations.jsonl").read_text() + "{not json\n")
    with pytest.raises(InvalidInput, match="checksum does not match"):
        portable.import_all(folder=tmp_path)
    assert Conversation.objects.count() == 0


def test_versions_and_missing_manifest_are_refused(corpus, tmp_path):
    with pytest.raises(NotFound, match="no manifest.json"):
        portable.import_all(folder=tmp_path)
    portable.export_all(out=tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["stores"]["conversations"]["version"] = 99
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InvalidInput, match="conversations version 99; this Winni reads version 1"):
        portable.import_all(folder=tmp_path)
    manifest["version"] = 2
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InvalidInput, match="format version 2"):
        portable.import_all(folder=tmp_path)
    with pytest.raises(InvalidInput, match="unknown store 'nope'"):
        portable.export_all(out=tmp_path / "x", stores=["nope"])


def test_commands(corpus, tmp_path, capsys):
    call_command("winni_export", out=tmp_path)
    assert capsys.readouterr().out.strip() == str(tmp_path)
    Conversation.objects.all().delete()
    call_command("winni_import", str(tmp_path))
    assert "added 4 conversations.conversation, 9 conversations.message" in capsys.readouterr().out
    with pytest.raises(CommandError, match="not a winni export"):
        call_command("winni_import", str(tmp_path / "nowhere"))


def test_imported_rows_keep_their_timestamps_even_with_auto_now(tmp_path):
    """Stores with auto_now / auto_now_add fields must not get the import time."""
    from winni_site.models import BackupRun

    then = "2020-02-02T02:02:02+00:00"
    row = portable.row_from_json(BackupRun, {"id": 41, "task_id": "t", "started_at": then}, fixed={})
    assert portable._insert_new(BackupRun, [(1, row)], "x.jsonl") == [41]
    assert BackupRun.objects.get(pk=41).started_at.isoformat() == then
    assert BackupRun._meta.get_field("started_at").auto_now_add  # switched back on afterwards
    assert portable._insert_new(BackupRun, [(1, row)], "x.jsonl") == []


def test_every_model_of_every_store_is_exported_or_deliberately_left_out():
    from django.apps import apps
    from django.conf import settings

    covered = set()
    for store in portable.installed_stores():
        covered |= {apps.get_model(label)._meta.label_lower for label in [store.model, *store.children.values()]}
    for app_name in ["core", "agents", "winni_site", *settings.WINNI_APPS]:
        for model in apps.get_containing_app_config(app_name).get_models():
            label = model._meta.label_lower
            assert label in covered or label in portable.NOT_EXPORTED, (
                f"{label} is neither exported (winni_site.portable.STORES) nor listed in NOT_EXPORTED")


def _fill_every_store() -> None:
    """A few rows in each installed store, through the stores' own services."""
    from django.apps import apps

    from core import projects

    # A project with identity keys, and rows of several stores in it (foreign keys across files).
    ops = projects.project_create(name="ops", path="/srv/ops", remote="git@github.com:org/ops.git")
    linked = Conversation.objects.order_by("pk").first()
    conv.conversation_set_project(conversation=linked, project=ops)
    conv.fiedler_result_store(correlation_id="run-1", model="m1", prompt="why?", output="because",
                              tokens_prompt=3, duration_seconds=0.5, conversation_id=str(linked.pk))
    conv.fiedler_result_store(correlation_id="run-1", model="m2", prompt="why?", output="", status="error",
                              error_message="timeout", redact=True)
    if portable.model_exists("memory.Memory"):
        from memory import services as memories
        from memory import vectors

        memory, _ = memories.memory_store(content="backups run at 03:00", tags=["ops"], metadata={"k": 1},
                                          project=ops)
        restore, _ = memories.memory_store(content="restore into a new database first", tags=["ops", "restore"])
        memories.memory_update(memory_id=restore.pk, content="restore into a new, empty database first",
                               reason="clearer", actor="alice")
        # The older memory points at the newer one (superseded_by): import must take either order.
        memories.memory_store(content="backups run at 04:00", supersedes=[str(memory.pk)], project=ops)
        vectors.embedding_store(kind="memory", ids=[memory.id], build_index=False)
    if portable.model_exists("librarian.QueryMemory"):
        from memory.librarian import services as librarian

        librarian.librarian_remember(query="How are backups kept?", answer="the newest seven", pin=True)
    if apps.is_installed("contexts"):
        from contexts import services as contexts

        contexts.context_set(name="first", content="resume from here", actor="alice")
        contexts.context_set(name="first", content="the ops project's", actor="alice", project=ops)
        contexts.context_set(name="second", content="no, from here", actor="bob")  # deactivates "first"
    if apps.is_installed("medallions"):
        from medallions import services as medallions
        from tests.medallion_support import document

        made = medallions.medallion_create(document=document(scope={"graph_nodes": ["repo"], "tags": ["ops"]}))
        medallions.medallion_update(medallion_id=made.id, document=document(scope={"graph_nodes": ["repo"], "tags": ["ops"]}),
                                    actor="alice")


def test_round_trip_of_every_installed_store(corpus, tmp_path):
    from django.apps import apps

    _fill_every_store()
    stores = portable.installed_stores()
    first = portable.export_all(out=tmp_path / "a")
    assert set(first["stores"]) == {store.store for store in stores}
    counts = {name: entry["rows"] for name, entry in first["stores"].items()}
    for store in reversed(stores):
        apps.get_model(store.model).objects.all().delete()
    portable.import_all(folder=tmp_path / "a")
    second = portable.export_all(out=tmp_path / "b")
    assert {name: entry["rows"] for name, entry in second["stores"].items()} == counts
    for name, entry in first["stores"].items():
        assert second["stores"][name]["sha256"] == entry["sha256"], name
    populated = {name for name, rows in counts.items() if any(rows.values())}
    assert {"conversations", "fiedler_results"} <= populated
    assert counts["fiedler_results"] == {"conversations.fiedlerresult": 2}
    assert counts["projects"] == {"core.project": 1, "core.projectkey": 2}
    if portable.model_exists("memory.Memory"):
        assert counts["memories"] == {"memory.memory": 3, "memory.memoryversion": 1}
        assert counts["embeddings"] == {"memory.embedding": 1}
        assert counts["embedding_models"] == {"memory.embeddingmodel": 1}
    if portable.model_exists("librarian.QueryMemory"):
        assert counts["cache_entries"] == {"librarian.querymemory": 1}
    if apps.is_installed("contexts"):
        assert counts["contexts"] == {"contexts.startupcontext": 3}
        assert counts["context_audit"]["contexts.startupcontextaudit"] >= 2
    if apps.is_installed("medallions"):
        assert counts["medallions"] == {"medallions.medallion": 1, "medallions.medallionrevision": 1}
