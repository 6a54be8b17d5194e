"""Schemathesis over a running Winni's OpenAPI schema, shared by tests/winni_site/test_ops_fuzz.py (a few
examples per operation) and bench/fuzz.py (many): every operation, with a token; a failure is
any 5xx or a response that does not match the schema."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

DEV_ONLY = ("winni_site.fuzzing needs schemathesis and hypothesis, development requirements that `./winni run` "
            "and the Docker image do not install: pip install -r requirements-dev.txt (./winni test does)")


def _checks() -> list[Callable[..., Any]]:
    """The checks: "no 5xx, and every response is what the schema says" — plus: data the schema forbids is
    refused. This long run does not add `positive_data_acceptance`: its generator may put NUL
    characters deep inside free-form metadata, which PostgreSQL refuses (a 400).
    tests/winni_site/test_api_schema.py runs every check (`--checks all`) with NUL left out of generated data."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        negative_data_rejection,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    return [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
            response_headers_conformance, negative_data_rejection]


@dataclass
class FuzzReport:
    operations: list[str] = field(default_factory=list)
    calls: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


# (path to POST, body, path parameter it feeds, key of the answer holding the value)
SEEDS = [
    ("/api/v1/conversations/", {"session_id": "fuzz"}, "conversation_id", "conversation_id"),
    ("/api/v1/conversations/", {"session_id": "fuzz"}, "session_id", "session_id"),
    ("/api/v1/fiedler-results/", {"correlation_id": "fuzz-run", "model": "m", "output": "o"},
     "correlation_id", "correlation_id"),
]


def real_ids(base_url: str, headers: dict[str, str]) -> dict[str, str]:
    """Values of path parameters that name stored rows: random strings never do, so half of the
    generated calls get a real one and reach the validation behind the lookup."""
    import httpx

    ids = {}
    for path, body, parameter, key in SEEDS:
        made = httpx.post(f"{base_url}{path}", json=body, headers=headers, timeout=30)
        if made.status_code == 201 and key in made.json():
            ids[parameter] = str(made.json()[key])
    return ids


def fuzz_api(base_url: str, token: str, *, examples: int, seed: int | None = 0,
             on_operation: Callable[[str], Any] | None = None) -> FuzzReport:
    # Imported here, not at the top: this module is part of winni_site, whose runtime does not
    # install the fuzzing tools (requirements-dev.txt).
    try:
        import schemathesis
        from hypothesis import HealthCheck, given, settings
        from schemathesis.core.failures import FailureGroup
        from schemathesis.core.result import Err
    except ImportError as exc:
        raise ImportError(DEV_ONLY) from exc

    checks = _checks()
    schema = schemathesis.openapi.from_url(f"{base_url}/api/schema/?format=json")
    headers = {"Authorization": f"Bearer {token}"}
    known = real_ids(base_url, headers)
    report = FuzzReport()
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise result.err()  # an operation of our own schema that schemathesis cannot read
        operation = result.ok()
        label = operation.label
        report.operations.append(label)

        @given(case=operation.as_strategy())
        @settings(max_examples=examples, deadline=None, derandomize=seed is not None, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case: Any) -> None:
            if report.calls % 2 == 0:
                for name in case.path_parameters or {}:
                    if name in known:
                        case.path_parameters[name] = known[name]
            response = case.call(base_url=base_url, headers=headers, timeout=30)
            report.calls += 1
            report.statuses[response.status_code] = report.statuses.get(response.status_code, 0) + 1
            case.validate_response(response, checks=checks)

        try:
            run()
        except (AssertionError, FailureGroup, Exception) as exc:  # noqa: B014 - report, keep going
            report.failures[label] = f"{type(exc).__name__}: {str(exc)[:1500]}"
        if on_operation:
            on_operation(label)
    return report
