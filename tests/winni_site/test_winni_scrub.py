"""`manage.py winni_scrub`: rows stored before scrubbing existed are found, counted per type and
store, rewritten with their index and vectors following, and an interrupted run resumes."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection

from contexts.models import StartupContext
from conversations.models import Conversation, FiedlerResult, Message
from medallions import services as medallions
from medallions.models import Medallion, MedallionRevision
from memory import vectors
from memory.models import Embedding, Memory
from tests.core.test_redaction import AWS, AWS_ID, GH, GITHUB, nothing_stored_anywhere
from tests.medallion_support import document
from winni_site import scrub_stored


def plant_raw() -> dict[str, object]:
    """Rows as an older Winni stored them: straight into the tables, secrets and all."""
    conversation = Conversation.objects.create(metadata={"env": f"TOKEN={GITHUB}"})
    first = Message.objects.create(conversation=conversation, turn_number=1, role="tool",
                                   content=f"GITHUB_TOKEN={GITHUB}\nok")
    second = Message.objects.create(conversation=conversation, turn_number=2, role="user", content="thanks")
    clean = Message.objects.create(conversation=conversation, turn_number=3, role="user", content="nothing here")
    memory = Memory.objects.create(content=f"the key is {AWS_ID}", content_hash="x" * 64)
    FiedlerResult.objects.create(correlation_id="c", model="m", prompt=f"use {GITHUB}", output="fine")
    StartupContext.objects.create(name="ops", content=f"deploy with {AWS_ID}")
    with_secret = medallions.medallion_create(document=document())
    Medallion.objects.filter(pk=with_secret.pk).update(summary={"high_level": f"uses {GITHUB}", "subsystems": []},
                                                       search_text=f"uses {GITHUB}")
    MedallionRevision.objects.create(medallion=with_secret, number=1, document={"summary": {"high_level": GITHUB}})
    return {"first": first, "second": second, "clean": clean, "memory": memory, "medallion": with_secret}


@pytest.mark.django_db(transaction=True)
class TestWinniScrub:
    def test_dry_run_counts_per_type_and_store_and_changes_nothing(self, capsys):
        plant_raw()
        call_command("winni_scrub", "--dry-run")
        out = capsys.readouterr().out
        assert "messages: 3 rows scanned, would rewrite 1; secrets: github-token 1" in out
        assert "memories: 1 rows scanned, would rewrite 1; secrets: aws-access-key 1" in out
        assert "conversations: 1 rows scanned, would rewrite 1; secrets: github-token 1" in out
        assert "total: 7 secret(s) in 7 row(s) (dry run: nothing changed)" in out
        assert Message.objects.filter(content__contains=GITHUB).exists()
        assert not scrub_stored.state_path().exists()

    def test_it_rewrites_reindexes_and_reembeds_the_changed_rows(self, capsys):
        rows = plant_raw()
        vectors.embedding_store(kind="message", ids=[rows["first"].pk, rows["second"].pk, rows["clean"].pk])
        vectors.embedding_store(kind="memory", ids=[rows["memory"].pk])
        before = {e.object_id: list(e.vector) for e in Embedding.objects.filter(kind__in=["message", "memory"])}
        call_command("winni_scrub")
        out = capsys.readouterr().out
        assert "total: 7 secret(s) in 7 row(s)" in out
        nothing_stored_anywhere()
        assert Message.objects.get(pk=rows["first"].pk).content == f"GITHUB_TOKEN={GH}\nok"
        assert Memory.objects.get(pk=rows["memory"].pk).content == f"the key is {AWS}"
        assert Medallion.objects.get(pk=rows["medallion"].pk).search_text.count(GH) == 1
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM conversations_message WHERE search_vector @@ to_tsquery('simple', %s)",
                           [GITHUB.lower()])
            assert cursor.fetchone()[0] == 0
        after = {e.object_id: list(e.vector) for e in Embedding.objects.filter(kind__in=["message", "memory"])}
        # The changed rows (and the turn after a changed message) were embedded again; the rest kept theirs.
        assert after[str(rows["first"].pk)] != before[str(rows["first"].pk)]
        assert after[str(rows["memory"].pk)] != before[str(rows["memory"].pk)]
        assert after[str(rows["clean"].pk)] == before[str(rows["clean"].pk)]
        assert str(rows["second"].pk) in after
        call_command("winni_scrub")
        assert "total: 0 secret(s) in 0 row(s)" in capsys.readouterr().out

    def test_an_interrupted_run_resumes_where_it_stopped(self, monkeypatch):
        plant_raw()
        monkeypatch.setattr(scrub_stored, "BATCH", 2)
        seen = []

        def stop_after_two_batches(label: str, rows: int) -> None:
            seen.append(label)
            if label == "messages" and seen.count("messages") == 1:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            scrub_stored.scrub_stored(progress=stop_after_two_batches)
        assert scrub_stored.state_path().exists()
        report = scrub_stored.scrub_stored()
        assert report.scanned["messages"] == 1  # the rows after the batch done
        assert report.scanned["conversations"] == 0  # done before the interruption
        assert not scrub_stored.state_path().exists()
        nothing_stored_anywhere()


@pytest.mark.django_db
def test_tags_reasons_versions_and_job_errors_stored_before_are_scrubbed():
    """The columns the write paths did not scrub before issue #43: a memory's tags and update
    reason, its earlier versions, a medallion's scope and a failed job's error."""
    from medallions.models import MedallionJob
    from memory.models import MemoryVersion

    memory = Memory.objects.create(content="deploys", content_hash="y" * 64, tags=[GITHUB.lower(), "ci"],
                                   update_reason=f"rotated {AWS_ID}")
    MemoryVersion.objects.create(memory=memory, version=1, content=f"key {GITHUB}", tags=[GITHUB], reason="r",
                                 written_at=memory.created_at, replaced_at=memory.created_at)
    MedallionJob.objects.create(graph_nodes=["repo:x"], tags=[GITHUB], evidence={}, error=f"provider said {AWS_ID}")
    scrub_stored.scrub_stored()
    nothing_stored_anywhere()
    assert Memory.objects.get(pk=memory.pk).tags[1] == "ci"
