"""The offline extractive provider: always a valid medallion (200 generated inputs, empty and huge
included), and a useful one on a realistic session."""
import pytest

from medallions import extractive, llm, schema, services
from tests.medallion_support import SCOPE, SESSION, generated_evidence

pytestmark = pytest.mark.django_db


def _document(content: schema.Content) -> dict:
    return {**content.model_dump(mode="json"), "scope": SCOPE}


def test_valid_on_200_generated_inputs_including_empty_and_huge():
    provider = extractive.ExtractiveLLM()
    inputs = generated_evidence(200)
    valid = 0
    previous = None
    for evidence in inputs:
        material = services.evidence_for_llm(services.validate_evidence(evidence))
        generated = provider.generate(SCOPE, material)
        services.validate_document(_document(generated))
        if previous is not None:
            updated = provider.update(previous, material)
            services.validate_document(_document(updated))
        previous = {**_document(generated), "meta": {}}
        valid += 1
    print(f"\nextractive provider: {valid}/{len(inputs)} valid medallions (generate and update)")
    assert valid == len(inputs) == 200


def test_it_is_deterministic():
    material = services.evidence_for_llm(services.validate_evidence(SESSION))
    assert extractive.ExtractiveLLM().generate(SCOPE, material) == extractive.ExtractiveLLM().generate(SCOPE, material)


def test_a_realistic_session_gives_a_useful_medallion():
    material = services.evidence_for_llm(services.validate_evidence({
        **SESSION,
        "transcripts": SESSION["transcripts"] + [
            "assistant: I tried running the migrations in parallel but it did not work.\n"
            "user: The medallion schema must never change without a version bump.\n"
            "$ .venv/bin/python manage.py migrate"],
    }))
    content = extractive.ExtractiveLLM().generate(SCOPE, material)
    assert content.summary.high_level.startswith("We built the medallion store.")
    assert [d.statement for d in content.decisions] == [
        "We decided to use PostgreSQL arrays because GIN indexes make subset queries fast."]
    assert content.decisions[0].rationale == "GIN indexes make subset queries fast."
    assert content.decisions[0].confidence == 0.8
    questions = {q.question: q for q in content.open_questions}
    # The first question was answered in the transcript; the last one was not.
    assert "Where do the scope queries live?" not in questions
    assert "TODO: add a backup job." in questions
    diffs = questions["Should the admin show diffs? (This is blocked on the history view.)"]
    assert (diffs.priority, diffs.blocked_on) == ("medium", "the history view")
    entry_points = content.affordances.recommended_entry_points
    assert "medallions/models.py" in entry_points and "medallions/services.py" in entry_points
    assert "already ran: pytest -q tests" in content.affordances.avoid_repeating
    assert "already ran: .venv/bin/python manage.py migrate" in content.affordances.avoid_repeating
    assert any("did not work" in item for item in content.affordances.avoid_repeating)
    assert content.affordances.invariants == ["The medallion schema must never change without a version bump."]
    assert {s.name for s in content.summary.subsystems} == {"medallions", ".venv", "(top level)"}


def test_update_merges_keeps_ids_and_resolves_questions():
    provider = extractive.ExtractiveLLM()
    first = provider.generate(SCOPE, llm.Evidence("We decided to use Python 3.11. TODO: pick a web framework."))
    existing = _document(first)
    assert [q.id for q in first.open_questions] == ["Q-001"]
    second = provider.update(existing, llm.Evidence(
        "Q-001 is resolved. We decided to use Django because it has an admin. Should we add GraphQL later?"))
    assert [d.id for d in second.decisions] == ["D-001", "D-002"]
    assert [q.id for q in second.open_questions] == ["Q-002"]
    assert second.open_questions[0].priority == "low"
    assert second.summary.high_level.startswith("Q-001 is resolved.")
    assert "Earlier: We decided to use Python 3.11. TODO: pick a web framework." in second.summary.high_level
    assert second.summary.high_level.endswith("(2 decision(s), 1 open question(s) recorded.)")
    unchanged = provider.update(_document(second), llm.Evidence())
    assert unchanged.summary.high_level == second.summary.high_level
    assert unchanged.decisions == second.decisions


def test_a_session_checkpointed_again_is_summarised_once():
    """`claude -p --resume` ends the session at every prompt: each end checkpoints it again, with
    the same start; the summary names each session once, newest first."""
    provider = extractive.ExtractiveLLM()
    first = _document(provider.generate(SCOPE, llm.Evidence(transcripts=["User: Fix the report-merge retries."])))
    resumed = llm.Evidence(transcripts=["User: How many times does the report-merge job retry?\nAssistant: Four."])
    again = provider.update(_document(provider.update(first, resumed)), resumed)
    assert again.summary.high_level == (
        "Session started with: How many times does the report-merge job retry? Earlier: Session started with: "
        "Fix the report-merge retries. (0 decision(s), 0 open question(s) recorded.)")


def test_an_explicit_decision_line_is_a_decision():
    material = services.evidence_for_llm(services.validate_evidence({
        "session_summary": "",
        "transcripts": ["user: Decision: store every money amount as integer cents, never floats.\n"
                        "assistant: Done: src/money.py converts with to_cents."]}))
    decisions = extractive.ExtractiveLLM().generate(SCOPE, material).model_dump(mode="json")["decisions"]
    assert [(d["statement"], d["confidence"]) for d in decisions] == [
        ("Store every money amount as integer cents, never floats.", 0.8)]


def test_labelled_decisions_win_over_passing_remarks_and_are_not_labelled_twice():
    material = services.evidence_for_llm(services.validate_evidence({
        "session_summary": "",
        "transcripts": ["user: We will use the old exporter for now, I guess.\n"
                        "assistant: Decided: the exporter writes CSV with a header row.\n"
                        "user: USE_TOOL **Decision:** amounts are integer cents."]}))
    decisions = extractive.ExtractiveLLM().generate(SCOPE, material).model_dump(mode="json")["decisions"]
    assert [d["statement"] for d in decisions] == ["The exporter writes CSV with a header row.",
                                                   "Amounts are integer cents."]
    assert extractive.decision_statement("Decision: Decided: x") == "Decided: x"  # one label taken off


def test_a_decision_the_reply_restates_is_one_decision():
    """An assistant that answers a decision by restating it ("Understood: we decided …") does not
    make it a second decision (core.repeats), while two different decisions stay two."""
    material = services.evidence_for_llm(services.validate_evidence({
        "session_summary": "",
        "transcripts": ["user: We decided to retry the report-merge job five times with a thirty second backoff.\n"
                        "assistant: Understood: we decided to retry the report-merge job five times with a thirty "
                        "second backoff.\n"
                        "user: We decided to keep the invoices as PDF files rendered by WeasyPrint."]}))
    decisions = extractive.ExtractiveLLM().generate(SCOPE, material).model_dump(mode="json")["decisions"]
    assert len(decisions) == 2, decisions
    assert "report-merge" in decisions[0]["statement"] and "WeasyPrint" in decisions[1]["statement"]
