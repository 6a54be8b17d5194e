"""REST views for startup contexts: one APIView per operation (HS), shapes from outputs.py."""
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from contexts import outputs, services
from core.actors import actor_name_from_rest
from core.errors import NotFound
from core.rest import StrictSerializer

NO_ACTIVE_CONTEXT = "no startup context is active"
PROJECT_PARAMETER = OpenApiParameter(
    "project", str, required=False,
    description="the project's slug or name; omitted: the global contexts (list: every context)")


def _project(request: Request) -> str | None:
    """The ?project= a detail URL addresses (its context is that project's; none: a global one)."""
    return request.query_params.get("project") or None


class ContextInput(StrictSerializer):
    content = serializers.CharField(trim_whitespace=False, allow_blank=True)
    set_active = serializers.BooleanField(required=False, allow_null=True, default=None)


class ContextListCreateApi(APIView):
    # Named: every view's nested "InputSerializer" would otherwise share one OpenAPI component.
    @extend_schema_serializer(component_name="ContextCreate")
    class InputSerializer(ContextInput):
        name = serializers.CharField(allow_blank=True, trim_whitespace=False)
        project = serializers.CharField(required=False, allow_null=True, allow_blank=True, default=None)

    @extend_schema(
        parameters=[OpenApiParameter("include_content", bool, required=False), PROJECT_PARAMETER],
        responses={200: dict},
        operation_id="contexts_list",
    )
    def get(self, request: Request) -> Response:
        include = request.query_params.get("include_content", "").lower() in ("1", "true", "yes")
        contexts = services.context_list(project=_project(request))
        return Response(outputs.context_list_dict(contexts, include_content=include))

    @extend_schema(request=InputSerializer, responses={201: dict}, operation_id="contexts_create")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        context = services.context_set(actor=actor_name_from_rest(request), mode="create", **data.validated_data)
        return Response(outputs.context_dict(context), status=201)


class ContextActiveApi(APIView):
    @extend_schema(parameters=[PROJECT_PARAMETER], responses={200: dict, 404: dict}, operation_id="contexts_active")
    def get(self, request: Request) -> Response:
        context = services.context_get(project=_project(request))
        if context is None:
            raise NotFound(NO_ACTIVE_CONTEXT)
        return Response(outputs.context_dict(context))


class ContextDetailApi(APIView):
    @extend_schema(parameters=[PROJECT_PARAMETER], responses={200: dict}, operation_id="contexts_retrieve")
    def get(self, request: Request, name: str) -> Response:
        return Response(outputs.context_dict(services.context_get(name=name, project=_project(request))))  # type: ignore[arg-type]

    @extend_schema(parameters=[PROJECT_PARAMETER], request=ContextInput, responses={200: dict},
                   operation_id="contexts_update")
    def put(self, request: Request, name: str) -> Response:
        data = ContextInput(data=request.data)
        data.is_valid(raise_exception=True)
        context = services.context_set(
            name=name, actor=actor_name_from_rest(request), mode="update", project=_project(request),
            **data.validated_data,
        )
        return Response(outputs.context_dict(context))

    @extend_schema(
        parameters=[OpenApiParameter("force", bool, required=True), PROJECT_PARAMETER], responses={204: None},
        operation_id="contexts_destroy",
    )
    def delete(self, request: Request, name: str) -> Response:
        force = request.query_params.get("force", "").lower() in ("1", "true", "yes")
        services.context_delete(name=name, force=force, actor=actor_name_from_rest(request), project=_project(request))
        return Response(status=204)


class ContextActivateApi(APIView):
    @extend_schema(parameters=[PROJECT_PARAMETER], request=None, responses={200: dict},
                   operation_id="contexts_activate")
    def post(self, request: Request, name: str) -> Response:
        context = services.context_activate(name=name, actor=actor_name_from_rest(request), project=_project(request))
        return Response(outputs.context_dict(context))


class ContextAuditApi(APIView):
    @extend_schema(parameters=[PROJECT_PARAMETER], responses={200: dict}, operation_id="contexts_audit")
    def get(self, request: Request, name: str) -> Response:
        rows = services.context_audit(name=name, project=_project(request))
        return Response({"audit": [outputs.audit_dict(row) for row in rows]})
