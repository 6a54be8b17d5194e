"""REST views for medallions: one APIView per operation (HS), shapes from outputs.py. The request
and response documents are described by the medallion schema itself (medallions/schema.py), turned
into OpenAPI components here."""
import copy
import json
from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import InvalidInput
from core.rest import EXTRA_COMPONENTS, NON_BLANK, answer, uuid_path
from medallions import inputs, outputs, schema, services

MEDALLIONS = ["medallions"]
MID = "5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f"
NOW = "2026-11-24T09:45:00+00:00"
MEDALLION_ID_PATH = uuid_path("medallion_id", "the medallion's id (`meta.id`)")
JOB_ID_PATH = uuid_path("job_id", "the checkpoint job's id (`job_id`)")
SCOPE_ITEM = {"type": "string", "pattern": NON_BLANK, "maxLength": schema.MAX_SCOPE_ITEM_CHARS}


def _components() -> dict[str, dict[str, Any]]:
    """The medallion schema's definitions as components `Medallion…`: `Medallion` is a stored
    document (what reads answer), `MedallionInput` what a write takes (`meta` optional and partial:
    the server owns ids, times and the schema version; a scope item must hold a non-space
    character, which the service checks beyond the JSON Schema)."""
    full = schema.json_schema()
    text = json.dumps(full).replace('"#/$defs/', '"#/components/schemas/Medallion')
    full = json.loads(text)
    defs = full.pop("$defs")
    for key in ("$schema", "$id"):
        full.pop(key, None)
    components = {f"Medallion{name}": value for name, value in defs.items()}
    components["Medallion"] = full
    scope = copy.deepcopy(components["MedallionScope"])
    for axis in ("graph_nodes", "tags"):
        scope["properties"][axis]["items"] = SCOPE_ITEM
    components["MedallionScopeInput"] = scope
    meta = copy.deepcopy(components["MedallionMeta"])
    meta.pop("required", None)
    meta["properties"]["id"] = {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "string", "maxLength": 0}],
                                "nullable": True, "description": "omitted, empty or null: a new id"}
    for owned in ("schema_version", "created_at", "updated_at"):
        meta["properties"][owned] = {"type": "string", "nullable": True, "description": "ignored: the server sets it"}
    meta["additionalProperties"] = True
    meta["description"] = "optional: only `id` (on create), `status` and `model_info` are read"
    components["MedallionMetaInput"] = meta
    document = copy.deepcopy(full)
    document["properties"]["meta"] = {"allOf": [{"$ref": "#/components/schemas/MedallionMetaInput"}],
                                      "nullable": True}
    document["properties"]["scope"] = {"$ref": "#/components/schemas/MedallionScopeInput"}
    document["required"] = ["summary", "scope"]
    document["title"] = "MedallionInput"
    components["MedallionInput"] = document
    return components


EXTRA_COMPONENTS.update(_components())
MEDALLION_REF = {"$ref": "#/components/schemas/Medallion"}
INPUT_BODY = {"application/json": {"$ref": "#/components/schemas/MedallionInput"}}
EXAMPLE_INPUT: dict[str, Any] = {
    "scope": {"graph_nodes": ["billing/invoices"], "tags": ["repo:winni"]},
    "summary": {"high_level": "Invoices are exported nightly as CSV; money is integer cents.",
                "subsystems": [{"name": "export", "status": "in_progress", "notes": "CSV writer done"}]},
    "decisions": [{"id": "D1", "statement": "Store money as integer cents", "rationale": "no float rounding",
                   "confidence": 0.9, "status": "active"}],
    "open_questions": [{"id": "Q1", "question": "Which time zone do exports use?", "blocked_on": "finance",
                        "priority": "high"}],
    "affordances": {"recommended_entry_points": ["billing/export.py"], "avoid_repeating": [],
                    "invariants": ["amounts are integers"]},
}
EXAMPLE: dict[str, Any] = {**EXAMPLE_INPUT, "meta": {"id": MID, "schema_version": schema.SCHEMA_VERSION, "created_at": NOW,
                                     "updated_at": NOW, "status": "active",
                                     "model_info": {"provider": "", "model": ""}}}


JOB_PENDING = {"job_id": "8b7a6c5d-4e3f-4a2b-9c1d-0e1f2a3b4c5d", "status": "pending", "operation": "",
               "scope": {"graph_nodes": ["billing/invoices"], "tags": ["repo:winni"]}, "provider": "extractive",
               "created_at": NOW, "started_at": None, "finished_at": None, "medallion_id": None, "medallion": None,
               "error": None}
JOB_DONE = {**JOB_PENDING, "status": "done", "operation": "update", "started_at": NOW, "finished_at": NOW,
            "medallion_id": MID, "medallion": EXAMPLE}


def _actor(request: Request) -> str:
    return str(request.user) if request.user else ""


def _body_object(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise InvalidInput("the request body must be a JSON object (a medallion)", field="medallion")
    return dict(request.data)


def _document(description: str, example: Any = None) -> OpenApiResponse:
    examples = [OpenApiExample("example", value=example)] if example is not None else []
    return OpenApiResponse(response=MEDALLION_REF, description=description, examples=examples)


class MedallionListApi(APIView):
    """GET: the newest medallions for a scope (subset match); POST: create one."""

    FilterSerializer = inputs.LIST.serializer(nullable=False)

    @extend_schema(
        operation_id="medallions_list", tags=MEDALLIONS, summary="Medallions for a scope",
        description="The newest medallions whose scope contains the requested graph nodes and tags (a subset "
                    "match; nothing requested matches everything), newest first (`medallion_load_for_scope`).",
        parameters=[FilterSerializer],
        responses={200: OpenApiResponse(
            response={"type": "object", "required": ["medallions", "text"], "properties": {
                "medallions": {"type": "array", "items": MEDALLION_REF},
                "text": {"type": "string", "nullable": True, "description": "with as_text=true"}}},
            description="the medallions", examples=[OpenApiExample("example",
                                                                   value={"medallions": [EXAMPLE], "text": None})])},
    )
    def get(self, request: Request) -> Response:
        data = self.FilterSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        f = data.validated_data
        medallions = services.medallions_latest_for_scope(
            scope={"graph_nodes": f["graph_nodes"], "tags": f["tags"]}, limit=f["limit"], offset=f["offset"],
            status=None if f["status"] == "any" else f["status"], project=f.get("project"),
        )
        text = "\n".join(services.medallion_as_text(m) for m in medallions) if f["as_text"] else None
        return Response(outputs.medallion_list_dict(medallions, text))

    @extend_schema(
        operation_id="medallions_create", tags=MEDALLIONS, summary="Create a medallion",
        description="Stores a medallion document written by a client, validated against the medallion schema "
                    "(`GET /medallions/schema/`); the first problem is named by its JSON path "
                    "(`decisions[0].confidence`). The server sets `meta` (a given `meta.id` that exists is a 409).",
        request=INPUT_BODY,
        examples=[OpenApiExample("a checkpoint of the invoice export", request_only=True, value=EXAMPLE_INPUT)],
        responses={201: _document("the stored medallion", EXAMPLE)},
    )
    def post(self, request: Request) -> Response:
        medallion = services.medallion_create(document=_body_object(request), actor=_actor(request))
        return Response(outputs.medallion_dict(medallion), status=201)


class MedallionDetailApi(APIView):
    @extend_schema(
        operation_id="medallions_retrieve", tags=MEDALLIONS, summary="Get a medallion",
        description="One medallion by id (`medallion_get`).", parameters=[MEDALLION_ID_PATH],
        responses={200: _document("the medallion", EXAMPLE)},
    )
    def get(self, request: Request, medallion_id: str) -> Response:
        return Response(outputs.medallion_dict(services.medallion_get(medallion_id=medallion_id)))

    @extend_schema(
        operation_id="medallions_update", tags=MEDALLIONS, summary="Replace a medallion",
        description="Replaces the document (validated like a create); the previous version is kept as a "
                    "revision (`GET /medallions/{medallion_id}/history/`); `created_at` stays.",
        parameters=[MEDALLION_ID_PATH], request=INPUT_BODY,
        examples=[OpenApiExample("the same scope, one more decision", request_only=True, value={
            **EXAMPLE_INPUT, "decisions": [*EXAMPLE_INPUT["decisions"], {
                "id": "D2", "statement": "Exports use UTC", "confidence": 0.8}]})],
        responses={200: _document("the medallion after the update", EXAMPLE)},
    )
    def put(self, request: Request, medallion_id: str) -> Response:
        medallion = services.medallion_update(medallion_id=medallion_id, document=_body_object(request),
                                              actor=_actor(request))
        return Response(outputs.medallion_dict(medallion))


class MedallionHistoryApi(APIView):
    @extend_schema(
        operation_id="medallions_history", tags=MEDALLIONS, summary="A medallion's revisions",
        description="The earlier versions of a medallion, newest first, with who replaced them and how "
                    "(update, checkpoint, archive).",
        parameters=[MEDALLION_ID_PATH],
        responses={200: answer(outputs.HistoryDict, "the revisions", {"medallion_id": MID, "revisions": [
            {"number": 1, "actor": "alice", "operation": "update", "job_id": None, "created_at": NOW,
             "document": EXAMPLE}]})},
    )
    def get(self, request: Request, medallion_id: str) -> Response:
        revisions = services.medallion_history(medallion_id=medallion_id)
        return Response(outputs.history_dict(medallion_id, revisions))


class MedallionArchiveApi(APIView):
    @extend_schema(
        operation_id="medallions_archive", tags=MEDALLIONS, summary="Archive a medallion",
        description="Sets the status to archived (keeping a revision): it leaves scope loads and recall unless "
                    "asked for with `status=archived` or `any`.",
        parameters=[MEDALLION_ID_PATH], request=None,
        responses={200: _document("the archived medallion", {**EXAMPLE, "meta": {**EXAMPLE["meta"], "status": "archived"}})},
    )
    def post(self, request: Request, medallion_id: str) -> Response:
        medallion = services.medallion_archive(medallion_id=medallion_id, actor=_actor(request))
        return Response(outputs.medallion_dict(medallion))


class MedallionSchemaApi(APIView):
    @extend_schema(
        operation_id="medallions_schema", tags=MEDALLIONS, summary="The medallion JSON Schema",
        description="The JSON Schema (draft 2020-12) every medallion write is validated against; the Python "
                    "client `winni_client` bundles the same file.",
        responses={200: OpenApiResponse(response={"type": "object", "additionalProperties": True},
                                        description="a JSON Schema document")},
    )
    def get(self, request: Request) -> Response:
        return Response(schema.json_schema())


class MedallionCheckpointApi(APIView):
    InputSerializer = inputs.CHECKPOINT.serializer()

    @extend_schema(
        operation_id="medallions_checkpoint", tags=MEDALLIONS, summary="Checkpoint a session into a medallion",
        description="Starts a checkpoint job (`medallion_checkpoint_session`): the configured LLM (the offline "
                    "extractive writer by default) updates the active medallion of exactly this scope, or writes "
                    "a new one. Answers 202 with the job at once, or 200 when it finished within "
                    "`wait_seconds`; a failure leaves nothing partial and says scope, operation and cause.",
        request=InputSerializer,
        examples=[OpenApiExample("end of a session", request_only=True, value={
            "scope": {"graph_nodes": ["billing/invoices"], "tags": ["repo:winni"]},
            "evidence": {"session_summary": "Finished the CSV writer; money stays integer cents."},
            "wait_seconds": 10})],
        responses={200: answer(outputs.JobDict, "the job, finished", JOB_DONE),
                   202: answer(outputs.JobDict, "the job, still running: poll GET /medallions/jobs/{job_id}/",
                               JOB_PENDING)},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        job = services.medallion_checkpoint(**data.validated_data, actor=_actor(request))
        finished = job.status in ("done", "failed")
        return Response(outputs.job_dict(job), status=200 if finished else 202)


class MedallionJobApi(APIView):
    @extend_schema(
        operation_id="medallions_job_status", tags=MEDALLIONS, summary="A checkpoint job's status",
        description="pending, running, done (with the medallion) or failed (with scope, operation and cause).",
        parameters=[JOB_ID_PATH],
        responses={200: answer(outputs.JobDict, "the job", JOB_DONE)},
    )
    def get(self, request: Request, job_id: str) -> Response:
        return Response(outputs.job_dict(services.medallion_job_get(job_id=job_id)))
