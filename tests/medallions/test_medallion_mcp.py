"""Medallion tools and resources through the real streamable-HTTP transport (uvicorn + the official
client, Claude Code's legacy handshake and the modern mode)."""
import json
import uuid

import pytest

from medallions.models import Medallion, MedallionJob
from tests.medallion_support import SCOPE, SESSION

pytestmark = pytest.mark.live


def test_checkpoint_load_get_job_and_resource(mcp):
    assert {"medallion_checkpoint_session", "medallion_load_for_scope", "medallion_get",
            "medallion_job_status"} <= set(mcp.list_tools())
    job = mcp.call("medallion_checkpoint_session", {"scope": SCOPE, "evidence": SESSION, "wait_seconds": 30})
    assert (job["status"], job["operation"]) == ("done", "generate")
    medallion = job["medallion"]
    assert medallion["scope"] == SCOPE
    assert mcp.call("medallion_job_status", {"job_id": job["job_id"]})["medallion_id"] == medallion["meta"]["id"]

    loaded = mcp.call("medallion_load_for_scope", {"scope": {"graph_nodes": ["repo:muse"]}, "as_text": True})
    assert [m["meta"]["id"] for m in loaded["medallions"]] == [medallion["meta"]["id"]]
    assert "GIN" in loaded["text"]
    assert mcp.call("medallion_get", {"medallion_id": medallion["meta"]["id"]}) == medallion

    resource = mcp._run(lambda c: c.read_resource(f"winni://medallions/{medallion['meta']['id']}"))
    assert json.loads(resource.contents[0].text)["meta"]["id"] == medallion["meta"]["id"]


def test_bad_input_is_an_error_result_and_writes_nothing(mcp_legacy):
    call_error = mcp_legacy.call_error
    assert "a checkpoint needs a scope" in call_error("medallion_checkpoint_session",
                                                      {"scope": {"graph_nodes": [], "tags": []}})
    assert "graph_nodes" in call_error("medallion_checkpoint_session", {"scope": {"graph_nodes": [3]}})
    assert "tags" in call_error("medallion_load_for_scope", {"scope": {"tags": "x"}})
    assert "nodes" in call_error("medallion_load_for_scope", {"scope": {"nodes": ["x"]}})
    assert "wait_seconds" in call_error("medallion_checkpoint_session", {"scope": SCOPE, "wait_seconds": 500})
    assert "sumary" in call_error("medallion_checkpoint_session", {"scope": SCOPE, "evidence": {"sumary": "x"}})
    unknown = str(uuid.uuid4())
    assert f"medallion {unknown} not found" in call_error("medallion_get", {"medallion_id": unknown})
    assert "not found" in call_error("medallion_job_status", {"job_id": "nope"})
    assert "not found" in call_error("medallion_checkpoint_session",
                                     {"scope": SCOPE, "evidence": {"conversation_id": unknown}})
    assert Medallion.objects.count() == 0 and MedallionJob.objects.count() == 0
