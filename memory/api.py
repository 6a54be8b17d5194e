"""REST views for memories: one APIView per operation (HS), shapes from outputs.py. Unlike MCP,
REST may delete: it serves the people who own the data."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access, timerank
from core.actors import actor_name_from_rest
from core.rest import StrictSerializer
from memory import outputs, services

PAGE_SIZE_MAX = 100


class MemoryCreateListApi(APIView):
    class InputSerializer(StrictSerializer):
        content = serializers.CharField(trim_whitespace=False, allow_blank=True)
        tags = serializers.ListField(child=serializers.CharField(allow_blank=True, trim_whitespace=False),
                                     required=False, allow_null=True)
        metadata = serializers.JSONField(required=False, allow_null=True)
        conversation_id = serializers.CharField(required=False, allow_null=True)
        message_id = serializers.CharField(required=False, allow_null=True)
        project = serializers.CharField(required=False, allow_null=True, allow_blank=True)
        supersedes = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)

    class ListSerializer(StrictSerializer):
        tag = serializers.ListField(child=serializers.CharField(), required=False)
        project = serializers.CharField(required=False)
        page = serializers.IntegerField(required=False, min_value=1, default=1)
        page_size = serializers.IntegerField(required=False, min_value=1, max_value=PAGE_SIZE_MAX, default=20)

    @extend_schema(request=InputSerializer, responses={201: dict, 200: dict}, operation_id="memories_create")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        memory, created, similar = services.memory_remember(**data.validated_data)
        return Response(outputs.stored_memory_dict(memory, created, similar), status=201 if created else 200)

    @extend_schema(parameters=[ListSerializer], responses={200: dict}, operation_id="memories_list")
    def get(self, request: Request) -> Response:
        params = self.ListSerializer(data={**request.query_params.dict(), "tag": request.query_params.getlist("tag")},
                                     context={"query_string": True})
        params.is_valid(raise_exception=True)
        page, size = params.validated_data["page"], params.validated_data["page_size"]
        queryset = services.memory_list(tags=params.validated_data.get("tag") or None,
                                        project=params.validated_data.get("project"))
        total = queryset.count()
        rows = queryset.select_related("project")[(page - 1) * size : page * size]
        return Response({"total": total, "page": page, "page_size": size,
                         "results": [outputs.memory_dict(memory) for memory in rows]})


class MemoryDetailApi(APIView):
    class UpdateSerializer(StrictSerializer):
        content = serializers.CharField(trim_whitespace=False, allow_blank=True, required=False, allow_null=True)
        tags = serializers.ListField(child=serializers.CharField(allow_blank=True, trim_whitespace=False),
                                     required=False, allow_null=True)
        reason = serializers.CharField(trim_whitespace=False, allow_blank=True, required=False, allow_null=True)

    @extend_schema(request=UpdateSerializer, responses={200: dict}, operation_id="memories_update")
    def put(self, request: Request, memory_id: str) -> Response:
        """New content and/or tags; the previous text becomes a version (GET …/history/)."""
        data = self.UpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        memory, changed = services.memory_update(memory_id=memory_id, actor=actor_name_from_rest(request),
                                                 **data.validated_data)
        return Response(outputs.updated_memory_dict(memory, changed))

    @extend_schema(request=UpdateSerializer, responses={200: dict}, operation_id="memories_partial_update")
    def patch(self, request: Request, memory_id: str) -> Response:
        return self.put(request, memory_id)

    @extend_schema(responses={200: dict}, operation_id="memories_retrieve")
    def get(self, request: Request, memory_id: str) -> Response:
        memory = services.memory_get(memory_id=memory_id)
        return Response({**outputs.memory_dict(memory), "embedding_model": services.memory_embedding_model(memory)})

    @extend_schema(responses={204: None}, operation_id="memories_destroy")
    def delete(self, request: Request, memory_id: str) -> Response:
        services.memory_delete(memory_id=memory_id)
        return Response(status=204)


class MemoryHistoryApi(APIView):
    @extend_schema(responses={200: dict}, operation_id="memories_history")
    def get(self, request: Request, memory_id: str) -> Response:
        memory, versions = services.memory_history(memory_id=memory_id)
        return Response(outputs.memory_history_dict(memory, versions))


class MemorySearchApi(APIView):
    token_scopes = {"POST": access.READ}  # a search, whatever the method
    class InputSerializer(StrictSerializer):
        query = serializers.CharField(trim_whitespace=False, allow_blank=True)
        limit = serializers.IntegerField(required=False, default=5)
        tags = serializers.ListField(child=serializers.CharField(allow_blank=True, trim_whitespace=False),
                                     required=False, allow_null=True)
        project = serializers.CharField(required=False, allow_null=True)
        start_date = serializers.CharField(required=False, allow_null=True)
        end_date = serializers.CharField(required=False, allow_null=True)
        include_superseded = serializers.BooleanField(required=False, default=False)
        as_of = serializers.CharField(required=False, allow_null=True, allow_blank=True)
        recency = serializers.FloatField(required=False, allow_null=True)

    def _search(self, data: dict) -> Response:
        time = timerank.plan(data["query"], as_of=data.pop("as_of", None), recency=data.pop("recency", None))
        hits = services.memory_search(**data, time=time)
        return Response(outputs.search_memory_dict(data["query"], hits, time))

    @extend_schema(request=InputSerializer, responses={200: dict}, operation_id="memories_search")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return self._search(data.validated_data)

    @extend_schema(parameters=[InputSerializer], responses={200: dict}, operation_id="memories_search_get")
    def get(self, request: Request) -> Response:
        raw = {**request.query_params.dict()}
        if "tags" in request.query_params:
            raw["tags"] = request.query_params.getlist("tags")
        data = self.InputSerializer(data=raw, context={"query_string": True})
        data.is_valid(raise_exception=True)
        return self._search(data.validated_data)
