"""REST views for medallions: one APIView per operation (HS), shapes from outputs.py."""
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.errors import InvalidInput
from core.rest import StrictSerializer
from medallions import outputs, schema, services

STATUS_CHOICES = ["active", "superseded", "archived", "any"]


def _actor(request: Request) -> str:
    return str(request.user) if request.user else ""


def _body_object(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise InvalidInput("the request body must be a JSON object (a medallion)", field="medallion")
    return dict(request.data)


class MedallionListApi(APIView):
    """GET: the newest medallions for a scope (subset match); POST: create one."""

    class FilterSerializer(StrictSerializer):
        graph_nodes = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        tags = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        status = serializers.ChoiceField(choices=STATUS_CHOICES, required=False, default="active")
        limit = serializers.IntegerField(min_value=1, max_value=100, required=False, default=20)
        offset = serializers.IntegerField(min_value=0, required=False, default=0)
        as_text = serializers.BooleanField(required=False, default=False)
        project = serializers.CharField(required=False, allow_null=True, default=None)

    @extend_schema(
        parameters=[
            OpenApiParameter("graph_nodes", str, many=True, description="repeatable; requested ⊆ stored"),
            OpenApiParameter("tags", str, many=True, description="repeatable; requested ⊆ stored"),
            OpenApiParameter("status", str, enum=STATUS_CHOICES, description="default active"),
            OpenApiParameter("limit", int), OpenApiParameter("offset", int),
            OpenApiParameter("as_text", bool, description="also return compact markdown in `text`"),
            OpenApiParameter("project", str, description="only this project's medallions (slug or name)"),
        ],
        responses={200: dict}, operation_id="medallions_list",
    )
    def get(self, request: Request) -> Response:
        params = {key: request.query_params.getlist(key) for key in ("graph_nodes", "tags")}
        params.update({key: request.query_params[key] for key in ("status", "limit", "offset", "as_text", "project")
                       if key in request.query_params})
        data = self.FilterSerializer(data=params, context={"query_string": True})
        data.is_valid(raise_exception=True)
        f = data.validated_data
        medallions = services.medallions_latest_for_scope(
            scope={"graph_nodes": f["graph_nodes"], "tags": f["tags"]}, limit=f["limit"], offset=f["offset"],
            status=None if f["status"] == "any" else f["status"], project=f["project"],
        )
        text = "\n".join(services.medallion_as_text(m) for m in medallions) if f["as_text"] else None
        return Response(outputs.medallion_list_dict(medallions, text))

    @extend_schema(request=dict, responses={201: dict}, operation_id="medallions_create")
    def post(self, request: Request) -> Response:
        medallion = services.medallion_create(document=_body_object(request), actor=_actor(request))
        return Response(outputs.medallion_dict(medallion), status=201)


class MedallionDetailApi(APIView):
    @extend_schema(responses={200: dict}, operation_id="medallions_retrieve")
    def get(self, request: Request, medallion_id: str) -> Response:
        return Response(outputs.medallion_dict(services.medallion_get(medallion_id=medallion_id)))

    @extend_schema(request=dict, responses={200: dict}, operation_id="medallions_update")
    def put(self, request: Request, medallion_id: str) -> Response:
        medallion = services.medallion_update(medallion_id=medallion_id, document=_body_object(request),
                                              actor=_actor(request))
        return Response(outputs.medallion_dict(medallion))


class MedallionHistoryApi(APIView):
    @extend_schema(responses={200: dict}, operation_id="medallions_history")
    def get(self, request: Request, medallion_id: str) -> Response:
        revisions = services.medallion_history(medallion_id=medallion_id)
        return Response(outputs.history_dict(medallion_id, revisions))


class MedallionArchiveApi(APIView):
    @extend_schema(request=None, responses={200: dict}, operation_id="medallions_archive")
    def post(self, request: Request, medallion_id: str) -> Response:
        medallion = services.medallion_archive(medallion_id=medallion_id, actor=_actor(request))
        return Response(outputs.medallion_dict(medallion))


class MedallionSchemaApi(APIView):
    @extend_schema(responses={200: dict}, operation_id="medallions_schema")
    def get(self, request: Request) -> Response:
        return Response(schema.json_schema())


class MedallionCheckpointApi(APIView):
    class InputSerializer(StrictSerializer):
        scope = serializers.JSONField()
        evidence = serializers.JSONField(required=False, default=dict)
        wait_seconds = serializers.IntegerField(min_value=0, max_value=services.MAX_WAIT_SECONDS, required=False,
                                                default=0)

    @extend_schema(request=InputSerializer, responses={200: dict, 202: dict}, operation_id="medallions_checkpoint")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        job = services.medallion_checkpoint(**data.validated_data, actor=_actor(request))
        finished = job.status in ("done", "failed")
        return Response(outputs.job_dict(job), status=200 if finished else 202)


class MedallionJobApi(APIView):
    @extend_schema(responses={200: dict}, operation_id="medallions_job_status")
    def get(self, request: Request, job_id: str) -> Response:
        return Response(outputs.job_dict(services.medallion_job_get(job_id=job_id)))
