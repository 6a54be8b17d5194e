"""MCP tools and resources for medallions: validate the shape (pydantic, via the SDK), call a
service, return the shapes in outputs.py."""
import json
from typing import Any

from core.actors import actor_name_from_mcp
from core.mcp import McpRegistry, Resource, read_tool, service_tool
from medallions import inputs, outputs, services


@service_tool
@inputs.CHECKPOINT.tool
def medallion_checkpoint_session(**given: Any) -> outputs.JobDict:
    """Update (or create) the medallion for exactly this scope from the session, as a background
    job: returns the job, or waits up to wait_seconds; then medallion_job_status(job_id)."""
    evidence = given["evidence"]
    job = services.medallion_checkpoint(scope=given["scope"].model_dump(),
                                        evidence=evidence.model_dump(exclude_none=True) if evidence else {},
                                        wait_seconds=given["wait_seconds"], actor=actor_name_from_mcp())
    return outputs.job_dict(job)


@read_tool
@inputs.LOAD.tool
def medallion_load_for_scope(**given: Any) -> outputs.MedallionListDict:
    """The latest active medallions whose scope contains the given graph nodes and tags (empty:
    any), newest first; as_text adds markdown in text."""
    medallions = services.load_medallions_for_scope(scope=given["scope"].model_dump(), limit=given["limit"],
                                                    project=given["project"])
    text = "\n".join(services.medallion_as_text(m) for m in medallions) if given["as_text"] else None
    return outputs.medallion_list_dict(medallions, text)


@read_tool
def medallion_get(medallion_id: str) -> outputs.MedallionDict:
    """One medallion by id."""
    return outputs.medallion_dict(services.medallion_get(medallion_id=medallion_id))


@read_tool
def medallion_job_status(job_id: str) -> outputs.JobDict:
    """A checkpoint job: pending, running, done (with the medallion) or failed (with the cause)."""
    return outputs.job_dict(services.medallion_job_get(job_id=job_id))


@service_tool
def medallion_resource(medallion_id: str) -> str:
    """A medallion as JSON."""
    return json.dumps(outputs.medallion_dict(services.medallion_get(medallion_id=medallion_id)), indent=1)


MCP = McpRegistry(
    tools=[
        medallion_checkpoint_session,
        medallion_load_for_scope,
        medallion_get,
        medallion_job_status,
    ],
    resources=[Resource(medallion_resource, "winni://medallions/{medallion_id}", mime_type="application/json")],
)
