"""Property-based fuzzing of the REST API from its own OpenAPI schema (schemathesis), through a
real server, with a token: no 5xx, and every response matches what the schema says. Bounded here
(a few examples per operation); `bench/fuzz.py` runs the long version."""
from __future__ import annotations

import pytest

from winni_site.fuzzing import fuzz_api

pytestmark = [pytest.mark.live, pytest.mark.slow]

EXAMPLES = 12


def test_api_never_fails_and_matches_its_schema(winni_server, live_token):
    report = fuzz_api(winni_server.url, live_token, examples=EXAMPLES)
    assert any("conversations" in label for label in report.operations)
    assert report.calls >= len(report.operations)
    assert report.failures == {}
    assert not [status for status in report.statuses if status >= 500]
