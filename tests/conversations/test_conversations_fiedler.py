import uuid

import pytest

from conversations import services
from conversations.models import FiedlerResult
from core.errors import InvalidInput, NotFound, PayloadTooLarge

pytestmark = pytest.mark.django_db


def _result(**extra):
    return {
        "correlation_id": "run-1", "model": "gpt-5", "prompt": "Explain the quokka migration",
        "output": "Quokkas do not migrate.", "tokens_prompt": 12, "tokens_completion": 5,
        "duration_seconds": 1.25, **extra,
    }


def test_store_and_get_by_correlation():
    conversation = services.conversation_begin()
    services.fiedler_result_store(**_result(conversation_id=str(conversation.id)))
    services.fiedler_result_store(**_result(model="gemini-2.5-pro", status="error", error_message="timeout", output=""))
    services.fiedler_result_store(**_result(correlation_id="run-2"))
    results = services.fiedler_results_for_correlation(correlation_id="run-1")
    assert [(r.model, r.status) for r in results] == [("gpt-5", "success"), ("gemini-2.5-pro", "error")]
    assert results[0].conversation_id == conversation.id
    assert results[0].tokens_prompt == 12 and results[0].duration_seconds == 1.25
    with pytest.raises(NotFound) as err:
        services.fiedler_results_for_correlation(correlation_id="nope")
    assert err.value.field == "correlation_id"


def test_per_request_redaction_stores_null_and_is_not_searchable():
    services.fiedler_result_store(**_result(prompt="secret platypus plan", redact=True, output="fine"))
    services.fiedler_result_store(**_result(prompt="open platypus plan", output="fine"))
    assert sorted(FiedlerResult.objects.values_list("prompt", flat=True), key=str) == [None, "open platypus plan"]
    found, total, _ = services.fiedler_results_query(text="secret")
    assert (found, total) == ([], 0)
    assert services.fiedler_results_query(text="platypus")[1] == 1


def test_server_setting_redacts_every_prompt(settings):
    settings.WINNI_REDACT_PROMPTS = True
    row = services.fiedler_result_store(**_result())
    batch = services.fiedler_results_store_batch(results=[_result(), _result(model="claude")])
    assert FiedlerResult.objects.get(pk=row.pk).prompt is None
    assert all(r.prompt is None for r in FiedlerResult.objects.filter(pk__in=[b.pk for b in batch]))


def test_batch_is_one_transaction_and_capped_at_100():
    stored = services.fiedler_results_store_batch(results=[_result(model=f"m{i}") for i in range(100)])
    assert len(stored) == 100 and FiedlerResult.objects.count() == 100
    with pytest.raises(InvalidInput) as too_many:
        services.fiedler_results_store_batch(results=[_result()] * 101)
    assert too_many.value.field == "results"
    with pytest.raises(InvalidInput) as bad:
        services.fiedler_results_store_batch(results=[_result(correlation_id="b"), _result(correlation_id="b", status="meh")])
    assert bad.value.field == "results[1].status"
    with pytest.raises(NotFound) as missing:
        services.fiedler_results_store_batch(
            results=[_result(correlation_id="b"), _result(correlation_id="b", conversation_id=str(uuid.uuid4()))]
        )
    assert missing.value.field == "results[1].conversation_id"
    assert not FiedlerResult.objects.filter(correlation_id="b").exists()
    assert FiedlerResult.objects.count() == 100


def test_query_filters_and_pages():
    services.fiedler_result_store(**_result(model="a", output="alpha answer"))
    services.fiedler_result_store(**_result(model="b", output="beta answer", status="error"))
    services.fiedler_result_store(**_result(model="a", output="gamma answer", correlation_id="run-9"))
    FiedlerResult.objects.filter(output="alpha answer").update(created_at="2024-01-01T00:00:00Z")
    assert [r.output for r in services.fiedler_results_query(model="a")[0]] == ["gamma answer", "alpha answer"]
    assert [r.output for r in services.fiedler_results_query(status="error")[0]] == ["beta answer"]
    assert [r.output for r in services.fiedler_results_query(text="gamma")[0]] == ["gamma answer"]
    assert [r.output for r in services.fiedler_results_query(end_date="2024-01-01")[0]] == ["alpha answer"]
    assert [r.output for r in services.fiedler_results_query(correlation_id="run-9")[0]] == ["gamma answer"]
    page, total, _ = services.fiedler_results_query(limit=1, offset=1)
    assert total == 3 and len(page) == 1


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"correlation_id": ""}, "correlation_id"),
        ({"model": "  "}, "model"),
        ({"output": None}, "output"),
        ({"status": "ok"}, "status"),
        ({"tokens_prompt": -1}, "tokens_prompt"),
        ({"tokens_completion": 1.5}, "tokens_completion"),
        ({"duration_seconds": -2}, "duration_seconds"),
        ({"metadata": "x"}, "metadata"),
        ({"conversation_id": "not-a-uuid"}, "conversation_id"),
        ({"redact": "yes"}, "redact"),
        ({"output": "nul \x00"}, "output"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_results_name_the_field_and_write_nothing(extra, field):
    with pytest.raises(InvalidInput) as err:
        services.fiedler_result_store(**_result(**extra))
    assert err.value.field == field
    assert FiedlerResult.objects.count() == 0


def test_oversized_output_and_unknown_conversation(settings):
    with pytest.raises(NotFound):
        services.fiedler_result_store(**_result(conversation_id=str(uuid.uuid4())))
    settings.WINNI_MAX_CONTENT_BYTES = 10
    with pytest.raises(PayloadTooLarge) as err:
        services.fiedler_result_store(**_result(output="x" * 11, prompt=None))
    assert err.value.field == "output"
    assert FiedlerResult.objects.count() == 0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"limit": 0}, "limit"), ({"offset": -3}, "offset"), ({"status": "x"}, "status"),
     ({"text": " "}, "text"), ({"start_date": "2024-02-30"}, "start_date")],
)
def test_bad_queries_name_the_field(kwargs, field):
    with pytest.raises(InvalidInput) as err:
        services.fiedler_results_query(**kwargs)
    assert err.value.field == field


def test_deleting_a_conversation_keeps_its_results_unlinked():
    conversation = services.conversation_begin()
    row = services.fiedler_result_store(**_result(conversation_id=str(conversation.id)))
    services.conversation_delete(conversation_id=conversation.id, force=True)
    assert FiedlerResult.objects.get(pk=row.pk).conversation_id is None
