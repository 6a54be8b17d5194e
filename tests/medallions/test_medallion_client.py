"""winni_client: the two session calls against a real Winni (uvicorn), and its schema validator
agreeing with the server's pydantic schema."""
import copy
import subprocess
import sys

import pytest
from pydantic import ValidationError

from medallions import schema
from tests.medallion_support import SCOPE, SESSION, document
from tests.support import ROOT
from winni_client import MedallionError, MedallionNotFoundError, MedallionValidationError, WinniClient, validate


@pytest.mark.live
def test_an_agent_loop_integrates_in_two_calls(winni_server, live_token):
    winni = WinniClient(winni_server.url, live_token)
    try:
        assert winni.load_as_text(SCOPE) == ""
        job = winni.checkpoint_session(SCOPE, SESSION, wait_seconds=30)
        assert job["status"] == "done"
        assert winni.wait_for_job(job["job_id"])["medallion_id"] == job["medallion"]["meta"]["id"]
        assert "GIN indexes" in winni.load_as_text(SCOPE)
        assert [m["meta"]["id"] for m in winni.load_medallions_for_scope(SCOPE)] == [job["medallion"]["meta"]["id"]]
        queued = winni.checkpoint_session(SCOPE, {"session_summary": "We decided to ship it."})
        assert queued["status"] in ("pending", "running", "done")
        assert winni.wait_for_job(queued["job_id"], timeout=30, interval=0.05)["operation"] == "update"
        with pytest.raises(MedallionValidationError) as error:
            winni.checkpoint_session({"graph_nodes": [], "tags": []}, {})
        assert error.value.path == "scope"
        with pytest.raises(MedallionNotFoundError):
            winni.job_status("00000000-0000-0000-0000-000000000000")
    finally:
        winni.close()
    bad = WinniClient(winni_server.url, "winni_wrong")
    with pytest.raises(MedallionError, match="401"):
        bad.load_medallions_for_scope(SCOPE)
    bad.close()


def test_the_client_imports_without_django():
    code = "import sys, winni_client; assert 'django' not in sys.modules and 'pydantic' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def _full(**changes):
    doc = document(meta={"id": "00000000-0000-0000-0000-000000000001", "schema_version": "1.0",
                         "created_at": "2026-11-22T00:00:00+00:00", "updated_at": "2026-11-22T00:00:00Z",
                         "status": "active"})
    for path, value in changes.items():
        target = doc
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[int(key)] if key.isdigit() else target[key]
        last = keys[-1]
        if value is KeyError:
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return doc


@pytest.mark.parametrize("changes, path", [
    ({}, None),
    ({"decisions__0__confidence": 1.01}, "decisions[0].confidence"),
    ({"decisions__0__confidence": -0.1}, "decisions[0].confidence"),
    ({"decisions__0__confidence": True}, "decisions[0].confidence"),
    ({"decisions__0__confidence": KeyError}, "decisions[0].confidence"),
    ({"decisions__0__status": "maybe"}, "decisions[0].status"),
    ({"decisions__0__id": ""}, "decisions[0].id"),
    ({"decisions": [{"id": "D", "statement": "s", "confidence": 0.5}] * 101}, "decisions"),
    ({"open_questions__0__question": "x" * 1001}, "open_questions[0].question"),
    ({"summary__subsystems__0__status": "done"}, "summary.subsystems[0].status"),
    ({"summary": "text"}, "summary"),
    ({"summary": KeyError}, "summary"),
    ({"meta__created_at": "yesterday"}, "meta.created_at"),
    ({"meta__status": "deleted"}, "meta.status"),
    ({"meta__model_info": {"provider": 3}}, "meta.model_info.provider"),
    ({"scope__graph_nodes": ["a", 1]}, "scope.graph_nodes[1]"),
    ({"scope__tags": [""]}, "scope.tags[0]"),
    ({"affordances__invariants": "x"}, "affordances.invariants"),
    ({"affordances__extra": []}, "affordances.extra"),
])
def test_client_validator_agrees_with_the_server_schema(changes, path):
    doc = _full(**changes)
    try:
        schema.Medallion.model_validate(copy.deepcopy(doc))
        server_path = None
    except ValidationError as exc:
        server_path = schema.error_list(exc)[0][0]
    try:
        validated = validate(copy.deepcopy(doc))
        client_path = None
    except MedallionValidationError as exc:
        client_path = exc.path
    assert server_path == client_path == path
    if path is None:
        assert validated == schema.Medallion.model_validate(doc).model_dump(mode="json") | {"meta": validated["meta"]}
