"""REST views for startup contexts: one APIView per operation (HS), shapes from outputs.py."""
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contexts import inputs, outputs, services
from core.actors import actor_name_from_rest
from core.errors import NotFound
from core.rest import answer

NO_ACTIVE_CONTEXT = "no startup context is active"
CONTEXTS = ["contexts"]
CID = "3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b9a"
NOW = "2026-11-24T09:40:00.000000+00:00"
CONTENT = "# Where we are\nMoney is integer cents. Next: the invoice export."
CONTEXT = {"context_id": CID, "id": CID, "name": "invoice-export", "project": None, "content": CONTENT,
           "is_active": True, "created_at": NOW, "updated_at": NOW}
NAME_PATH = inputs.NAME.path_parameter("name", "the context's name")


ScopeSerializer = inputs.GET.serializer(without=["name"], nullable=False, name="ScopeSerializer")


def _project(request: Request) -> str | None:
    """The ?project= a detail URL addresses (its context is that project's; none: a global one)."""
    data = ScopeSerializer(data=request.query_params)
    data.is_valid(raise_exception=True)
    return data.validated_data.get("project")


ContextInput = inputs.SET.serializer(without=["name", "project"], name="ContextInput")


class ContextListCreateApi(APIView):
    # Named: every view's nested "InputSerializer" would otherwise share one OpenAPI component.
    InputSerializer = inputs.SET.serializer(component="ContextCreate")

    ListSerializer = inputs.LIST.serializer(nullable=False)

    @extend_schema(
        operation_id="contexts_list", tags=CONTEXTS, summary="List startup contexts",
        description="Every startup context (global and per project) by project then name "
                    "(`dewey_list_startup_contexts`), with their text when `include_content=true`.",
        parameters=[ListSerializer],
        responses={200: answer(outputs.ContextListDict, "the contexts", {"contexts": [
            {key: value for key, value in CONTEXT.items() if key != "content"}]})},
    )
    def get(self, request: Request) -> Response:
        data = self.ListSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        contexts = services.context_list(project=data.validated_data.get("project"))
        return Response(outputs.context_list_dict(contexts, include_content=data.validated_data["include_content"]))

    @extend_schema(
        operation_id="contexts_create", tags=CONTEXTS, summary="Create a startup context",
        description="A new named context (`dewey_set_startup_context` with a new name); an existing name in the "
                    "same scope is a 409. With `set_active: true` it becomes the active one of its project (or "
                    "the active global one) in the same transaction. Every write leaves an audit row.",
        request=InputSerializer,
        examples=[OpenApiExample("the context for the next session", request_only=True,
                                 value={"name": "invoice-export", "content": CONTENT, "set_active": True})],
        responses={201: answer(outputs.ContextDict, "the new context", CONTEXT)},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        context = services.context_set(actor=actor_name_from_rest(request), mode="create", **data.validated_data)
        return Response(outputs.context_dict(context), status=201)


class ContextActiveApi(APIView):
    @extend_schema(
        operation_id="contexts_active", tags=CONTEXTS, summary="Get the active startup context",
        description="The active global context, or with `?project=` the project's (`dewey_get_startup_context`); "
                    "404 when none is active.",
        parameters=[ScopeSerializer],
        responses={200: answer(outputs.ContextDict, "the active context", CONTEXT)},
    )
    def get(self, request: Request) -> Response:
        context = services.context_get(project=_project(request))
        if context is None:
            raise NotFound(NO_ACTIVE_CONTEXT)
        return Response(outputs.context_dict(context))


class ContextDetailApi(APIView):
    DeleteSerializer = inputs.DELETE.serializer(without=["name"], nullable=False)

    @extend_schema(
        operation_id="contexts_retrieve", tags=CONTEXTS, summary="Get a startup context",
        description="One context by name: a global one, or with `?project=` the project's.",
        parameters=[NAME_PATH, ScopeSerializer],
        responses={200: answer(outputs.ContextDict, "the context", CONTEXT)},
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(outputs.context_dict(services.context_get(name=name, project=_project(request))))

    @extend_schema(
        operation_id="contexts_update", tags=CONTEXTS, summary="Update a startup context",
        description="Replaces the text of an existing context (404 if there is none) and optionally activates "
                    "or deactivates it; the change is audited (content hashes before and after).",
        parameters=[NAME_PATH, ScopeSerializer], request=ContextInput,
        examples=[OpenApiExample("new text, made active", request_only=True,
                                 value={"content": CONTENT, "set_active": True})],
        responses={200: answer(outputs.ContextDict, "the context after the update", CONTEXT)},
    )
    def put(self, request: Request, name: str) -> Response:
        data = ContextInput(data=request.data)
        data.is_valid(raise_exception=True)
        context = services.context_set(
            name=name, actor=actor_name_from_rest(request), mode="update", project=_project(request),
            **data.validated_data,
        )
        return Response(outputs.context_dict(context))

    @extend_schema(
        operation_id="contexts_destroy", tags=CONTEXTS, summary="Delete a startup context",
        description="Deletes a context (`dewey_delete_startup_context`); needs `force=true`. Its audit trail is "
                    "kept.",
        parameters=[NAME_PATH, DeleteSerializer],
        responses={204: None},
    )
    def delete(self, request: Request, name: str) -> Response:
        data = self.DeleteSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        services.context_delete(name=name, force=data.validated_data["force"], actor=actor_name_from_rest(request),
                                project=data.validated_data.get("project"))
        return Response(status=204)


class ContextActivateApi(APIView):
    @extend_schema(
        operation_id="contexts_activate", tags=CONTEXTS, summary="Activate a startup context",
        description="Makes the context the active one of its scope, deactivating the previous one in the same "
                    "transaction (the database allows one active context per project plus one global).",
        parameters=[NAME_PATH, ScopeSerializer], request=None,
        responses={200: answer(outputs.ContextDict, "the context, now active", CONTEXT)},
    )
    def post(self, request: Request, name: str) -> Response:
        context = services.context_activate(name=name, actor=actor_name_from_rest(request), project=_project(request))
        return Response(outputs.context_dict(context))


class ContextAuditApi(APIView):
    @extend_schema(
        operation_id="contexts_audit", tags=CONTEXTS, summary="A startup context's audit trail",
        description="Who changed the context, what and when, newest first (kept after a delete).",
        parameters=[NAME_PATH, ScopeSerializer],
        responses={200: answer(outputs.AuditListDict, "the audit rows", {"audit": [
            {"context_name": "invoice-export", "project": None, "action": "create", "actor": "alice", "at": NOW,
             "sha256_before": "", "sha256_after": "5d41402abc4b2a76b9719d911017c592"}]})},
    )
    def get(self, request: Request, name: str) -> Response:
        rows = services.context_audit(name=name, project=_project(request))
        return Response({"audit": [outputs.audit_dict(row) for row in rows]})
