"""checkpoint_session as a job: generate, then update with a revision; REST and job status; failures
store nothing and report scope, operation and cause."""
import datetime as dt
import uuid

import pytest

from conversations import services as conversation_services
from core.errors import InvalidInput, NotFound
from medallions import services
from medallions.models import JobStatus, Medallion, MedallionJob, MedallionRevision
from tests.llm_servers import HANG, FakeLLMServer
from tests.medallion_support import SCOPE, SESSION
from tests.support import celery_reconnect

# The job is queued on commit and (eager in tests) runs at once: these tests need real commits.
pytestmark = pytest.mark.django_db(transaction=True)


def test_checkpoint_generates_then_updates_the_same_medallion():
    first = services.medallion_checkpoint(scope=SCOPE, evidence=SESSION, wait_seconds=5, actor="alice")
    assert (first.status, first.operation, first.provider) == ("done", "generate", "extractive")
    medallion = first.medallion
    doc = medallion.document()
    assert doc["scope"] == SCOPE
    assert doc["meta"]["model_info"] == {"provider": "extractive", "model": "extractive-1"}
    assert any("GIN" in d["statement"] for d in doc["decisions"])
    assert "medallions/services.py" in doc["affordances"]["recommended_entry_points"]

    later = {"session_summary": "Q-001 is resolved: the admin shows diffs. We decided to keep revisions forever."}
    second = services.medallion_checkpoint(scope={"tags": ["project_state"], "graph_nodes": ["repo:muse"]},
                                           evidence=later, wait_seconds=5, actor="alice")
    assert (second.status, second.operation) == ("done", "update")
    assert second.medallion_id == medallion.id
    updated = Medallion.objects.get()
    assert updated.created_at == medallion.created_at and updated.updated_at > medallion.updated_at
    assert updated.status == "active"
    revision = MedallionRevision.objects.get()
    assert (revision.number, revision.actor, revision.job_id, revision.operation) == (
        1, "alice", second.id, "checkpoint:update")
    assert revision.document == doc
    statements = [d["statement"] for d in updated.decisions]
    assert statements[: len(doc["decisions"])] == [d["statement"] for d in doc["decisions"]]
    assert "We decided to keep revisions forever." in statements
    assert "Q-001" not in [q["id"] for q in updated.open_questions]


def test_a_superset_scope_gets_its_own_medallion():
    services.medallion_checkpoint(scope=SCOPE, evidence=SESSION, wait_seconds=5)
    wider = {"graph_nodes": ["repo:muse", "module:cli"], "tags": ["project_state"]}
    job = services.medallion_checkpoint(scope=wider, evidence=SESSION, wait_seconds=5)
    assert job.operation == "generate"
    assert Medallion.objects.count() == 2


def test_empty_evidence_still_gives_a_minimal_valid_medallion():
    job = services.medallion_checkpoint(scope=SCOPE, evidence={}, wait_seconds=5)
    assert job.status == "done"
    assert job.medallion.summary["high_level"] == "No evidence recorded for this scope yet."


def test_conversation_messages_become_the_transcript():
    conversation = conversation_services.conversation_begin(session_id="cc-9")
    for role, content in [("user", "Should we vendor the schema into winni_client?"),
                          ("assistant", "Yes. We decided to bundle medallion.schema.json because the client "
                                        "must not import Django."),
                          ("user", "TODO: document the client with an example")]:
        conversation_services.message_store(conversation_id=conversation.id, role=role, content=content)
    job = services.medallion_checkpoint(scope=SCOPE, evidence={"conversation_id": str(conversation.id)},
                                        wait_seconds=5)
    medallion = job.medallion
    assert any("bundle medallion.schema.json" in d["statement"] for d in medallion.decisions)
    assert [q["question"] for q in medallion.open_questions] == ["TODO: document the client with an example"]
    assert "Session started with: Should we vendor" in medallion.summary["high_level"]


@pytest.mark.parametrize("kwargs, field", [
    ({"scope": {"graph_nodes": [], "tags": []}}, "scope"),
    ({"scope": {}}, "scope"),
    ({"scope": {"graph_nodes": [42]}}, "scope.graph_nodes[0]"),
    ({"scope": {"tags": "x"}}, "scope.tags"),
    ({"scope": SCOPE, "evidence": "notes"}, "evidence"),
    ({"scope": SCOPE, "evidence": {"summary": "x"}}, "evidence.summary"),
    ({"scope": SCOPE, "evidence": {"session_summary": 5}}, "evidence.session_summary"),
    ({"scope": SCOPE, "evidence": {"transcripts": "x"}}, "evidence.transcripts"),
    ({"scope": SCOPE, "evidence": {"artefacts": [object()]}}, "evidence.artefacts[0]"),
    ({"scope": SCOPE, "wait_seconds": 121}, "wait_seconds"),
    ({"scope": SCOPE, "wait_seconds": -1}, "wait_seconds"),
])
def test_bad_checkpoints_are_refused_and_queue_nothing(kwargs, field):
    with pytest.raises(InvalidInput) as error:
        services.medallion_checkpoint(**{"evidence": {}, **kwargs})
    assert error.value.field == field
    assert MedallionJob.objects.count() == 0 and Medallion.objects.count() == 0


def test_unknown_conversation_and_job_are_not_found():
    with pytest.raises(NotFound):
        services.medallion_checkpoint(scope=SCOPE, evidence={"conversation_id": str(uuid.uuid4())})
    with pytest.raises(NotFound):
        services.medallion_job_get(job_id=str(uuid.uuid4()))
    assert MedallionJob.objects.count() == 0


@pytest.fixture
def hanging_model(settings):
    server = FakeLLMServer("openai", [HANG, HANG])
    settings.WINNI_MEDALLION_LLM_PROVIDER = "openai"
    settings.WINNI_MEDALLION_LLM_BASE_URL = server.url
    settings.WINNI_MEDALLION_LLM_MODEL = "slow-model"
    settings.WINNI_MEDALLION_LLM_TIMEOUT_SECONDS = 0.3
    yield server
    server.stop()


def test_a_model_that_times_out_fails_the_job_cleanly(hanging_model, api):
    response = api.post("/api/v1/medallions/checkpoint", {"scope": SCOPE, "evidence": SESSION, "wait_seconds": 5},
                        format="json")
    assert response.status_code == 200
    job = response.json()
    assert (job["status"], job["operation"], job["provider"]) == ("failed", "generate", "openai")
    assert job["error"]["scope"] == SCOPE and job["error"]["operation"] == "generate"
    assert "timed out after 0.3 s" in job["error"]["cause"]
    assert "repo:muse" in job["error"]["message"]
    assert job["medallion"] is None
    assert Medallion.objects.count() == 0 and MedallionRevision.objects.count() == 0
    assert api.get(f"/api/v1/medallions/jobs/{job['job_id']}").json()["status"] == "failed"


def test_a_failed_update_leaves_the_medallion_as_it_was(settings):
    first = services.medallion_checkpoint(scope=SCOPE, evidence=SESSION, wait_seconds=5).medallion
    server = FakeLLMServer("anthropic", ["no json", "still none"])
    settings.WINNI_MEDALLION_LLM_PROVIDER = "anthropic"
    settings.WINNI_MEDALLION_LLM_BASE_URL = server.url
    settings.WINNI_MEDALLION_LLM_MODEL = "m"
    try:
        job = services.medallion_checkpoint(scope=SCOPE, evidence={"session_summary": "more"}, wait_seconds=5)
    finally:
        server.stop()
    assert (job.status, job.operation) == ("failed", "update")
    assert "invalid medallion twice" in job.error
    assert Medallion.objects.get().document() == first.document()
    assert MedallionRevision.objects.count() == 0


def test_rest_checkpoint_202_then_job_status(api, settings):
    # With the worker slower than wait_seconds=0 the call returns at once with the pending job.
    settings.CELERY_TASK_ALWAYS_EAGER = False
    from winni_site.celery import app

    app.conf.task_always_eager = False
    app.conf.broker_url = "memory://"
    try:
        response = api.post("/api/v1/medallions/checkpoint/", {"scope": SCOPE, "evidence": SESSION}, format="json")
    finally:
        app.conf.task_always_eager = True
        app.conf.broker_url = settings.CELERY_BROKER_URL
        celery_reconnect(app)  # no later test of this process may send into the memory broker
    assert response.status_code == 202
    job = response.json()
    assert (job["status"], job["medallion"]) == ("pending", None)
    # The worker's side, run here: pending -> done.
    services.medallion_job_run(job_id=job["job_id"])
    done = api.get(f"/api/v1/medallions/jobs/{job['job_id']}").json()
    assert done["status"] == "done" and done["medallion"]["scope"] == SCOPE
    assert done["started_at"] and done["finished_at"]
    # A second delivery of the same job does nothing.
    assert services.medallion_job_run(job_id=job["job_id"]).status == JobStatus.DONE
    assert Medallion.objects.count() == 1


def test_rest_checkpoint_errors(api):
    assert api.post("/api/v1/medallions/checkpoint", {"scope": {"graph_nodes": []}}, format="json").json()[
        "error"]["fields"] == {"scope": ["must name at least one graph node or tag: a checkpoint "
                                         "needs a scope"]}
    bad_wait = api.post("/api/v1/medallions/checkpoint", {"scope": SCOPE, "wait_seconds": 500}, format="json")
    assert bad_wait.status_code == 400 and "wait_seconds" in bad_wait.json()["error"]["fields"]
    assert api.get(f"/api/v1/medallions/jobs/{uuid.uuid4()}").status_code == 404
    assert api.get("/api/v1/medallions/jobs/nope").status_code == 404
    assert MedallionJob.objects.count() == 0


def test_concurrent_updates_last_write_wins_and_no_revision_is_lost():
    import threading

    from django.db import connection

    from tests.medallion_support import document

    medallion = services.medallion_create(document=document())
    errors = []

    def write(n):
        try:
            services.medallion_update(medallion_id=medallion.id, document=document(summary={"high_level": f"w{n}"}),
                                      actor=f"writer-{n}")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    revisions = services.medallion_history(medallion_id=medallion.id)
    assert sorted(r.number for r in revisions) == [1, 2, 3, 4, 5, 6]
    # Each revision holds the version its writer replaced: the chain is unbroken.
    texts = [r.document["summary"]["high_level"] for r in sorted(revisions, key=lambda r: r.number)]
    final = Medallion.objects.get().summary["high_level"]
    assert texts[0] == "Muse is a CLI for music notes."
    assert sorted(texts[1:] + [final]) == sorted(f"w{n}" for n in range(6))


class BrokenLLM:
    provider, model = "broken", "x"

    def generate(self, scope, evidence):
        raise RuntimeError("kaboom")


def test_an_unexpected_error_fails_the_job_and_an_orphaned_job_runs_again(settings):
    import datetime as dt

    from django.utils import timezone

    job = MedallionJob.objects.create(graph_nodes=["repo:x"], evidence={})
    failed = services.medallion_job_run(job_id=job.id, llm=BrokenLLM())
    assert (failed.status, failed.operation) == ("failed", "generate")
    assert failed.error == "internal error: RuntimeError: kaboom"
    assert Medallion.objects.count() == 0
    # A job left "running" by a worker that died runs again on redelivery, but not a fresh one.
    MedallionJob.objects.filter(pk=job.pk).update(status="running", started_at=timezone.now())
    assert services.medallion_job_run(job_id=job.id).status == "running"
    MedallionJob.objects.filter(pk=job.pk).update(started_at=timezone.now() - dt.timedelta(hours=1))
    assert services.medallion_job_run(job_id=job.id).status == "done"
    with pytest.raises(NotFound):
        services.medallion_job_run(job_id=uuid.uuid4())


@pytest.mark.django_db
def test_a_job_whose_queued_task_was_lost_is_queued_again():
    """A stop (the embedded Redis keeps nothing) or a lost worker left the job pending for ever;
    the worker's start and beat queue such jobs again, and a job is never run twice."""
    lost = services.medallion_job_create(scope=SCOPE, evidence=SESSION)  # its on-commit queueing never ran
    fresh = services.medallion_job_create(scope=SCOPE, evidence=SESSION)
    MedallionJob.objects.filter(pk=lost.pk).update(created_at=lost.created_at - dt.timedelta(minutes=10))
    assert services.medallion_jobs_requeue(older_than_seconds=300) == 1
    assert (MedallionJob.objects.get(pk=lost.pk).status, MedallionJob.objects.get(pk=fresh.pk).status) == (
        JobStatus.DONE, JobStatus.PENDING)
    assert services.medallion_jobs_requeue(older_than_seconds=0) == 1  # the fresh one; the done one stays done
    assert MedallionRevision.objects.count() == 1 and Medallion.objects.count() == 1
