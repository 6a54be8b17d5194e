"""REST views for memories: one APIView per operation (HS), shapes from outputs.py. Unlike MCP,
REST may delete: it serves the people who own the data."""
from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access, timerank
from core.actors import actor_name_from_rest
from core.rest import ProjectField, StrictSerializer, answer, uuid_path
from memory import inputs, outputs, services
from memory.inputs import TagField

PAGE_SIZE_MAX = 100
MEMORIES = ["memories"]
MID = "9a4f6c1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b"
NOW = "2026-11-24T09:20:11.530112+00:00"
FACT = "Money amounts are stored as integer cents (BIGINT), never as floats."
MEMORY_ID_PATH = uuid_path("memory_id", "the memory's id (`memory_id`)")


class MemoryCreateListApi(APIView):
    InputSerializer = inputs.STORE.serializer()

    class ListSerializer(StrictSerializer):
        tag = serializers.ListField(child=TagField(), required=False, max_length=services.MAX_TAGS,
                                    help_text="repeatable: only memories carrying every one of these tags")
        project = ProjectField(required=False, help_text="only this project's (slug or name)")
        page = serializers.IntegerField(required=False, min_value=1, max_value=1_000_000, default=1)
        page_size = serializers.IntegerField(required=False, min_value=1, max_value=PAGE_SIZE_MAX, default=20)

    @extend_schema(
        operation_id="memories_create", tags=MEMORIES, summary="Store a memory",
        description="Remembers a fact, preference or decision for future sessions (`store_memory`). It is found "
                    "by full text at once and by meaning once the worker has embedded it. The same content "
                    "(ignoring case and spacing) in the same project returns the existing memory with 200 and "
                    "`duplicate: true`.",
        request=InputSerializer,
        examples=[OpenApiExample("a decision", request_only=True,
                                 value={"content": FACT, "tags": ["decision", "money"]})],
        responses={
            201: answer(outputs.StoredMemoryDict, "stored", {
                "memory_id": MID, "timestamp": NOW, "project": None, "tags": ["decision", "money"],
                "duplicate": False, "message": "stored", "supersedes": [], "superseded_by": None, "similar": []}),
            200: answer(outputs.StoredMemoryDict, "the same content was already stored: the existing memory", {
                "memory_id": MID, "timestamp": NOW, "project": None, "tags": ["decision", "money"],
                "duplicate": True, "message": "already stored", "supersedes": [], "superseded_by": None, "similar": []}),
        },
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        memory, created, similar = services.memory_remember(**data.validated_data)
        return Response(outputs.stored_memory_dict(memory, created, similar), status=201 if created else 200)

    @extend_schema(
        operation_id="memories_list", tags=MEMORIES, summary="List memories",
        description="Memories, newest first, a page at a time; filtered by tags (all of them) and project.",
        parameters=[ListSerializer],
        responses={200: answer(outputs.MemoryListDict, "one page", {
            "total": 1, "page": 1, "page_size": 20,
            "results": [{"memory_id": MID, "content": FACT, "timestamp": NOW, "project": None,
                         "tags": ["decision", "money"], "metadata": None, "conversation_id": None,
                         "message_id": None, "version": 1, "updated_at": None, "superseded_by": None,
                         "superseded_at": None}]})},
    )
    def get(self, request: Request) -> Response:
        params = self.ListSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        page, size = params.validated_data["page"], params.validated_data["page_size"]
        queryset = services.memory_list(tags=params.validated_data.get("tag") or None,
                                        project=params.validated_data.get("project"))
        total = queryset.count()
        rows = queryset.select_related("project")[(page - 1) * size : page * size]
        return Response({"total": total, "page": page, "page_size": size,
                         "results": [outputs.memory_dict(memory) for memory in rows]})


class MemoryDetailApi(APIView):
    UpdateSerializer = inputs.UPDATE.serializer(without=["memory_id"])

    UPDATE_DOC: dict[str, Any] = dict(
        tags=MEMORIES, parameters=[MEMORY_ID_PATH],
        description="New content and/or tags (`update_memory`); the memory keeps its id and the previous text "
                    "becomes a version (`GET /memories/{memory_id}/history/`). Give content or tags.",
        request=UpdateSerializer,
        examples=[OpenApiExample("a corrected fact", request_only=True,
                                 value={"content": FACT, "reason": "cents, not floats"})],
        responses={200: answer(outputs.UpdatedMemoryDict, "the memory after the update", {
            "memory_id": MID, "content": FACT, "tags": ["decision", "money"], "project": None, "version": 2,
            "updated_at": NOW, "changed": True, "message": "updated"})},
    )

    @extend_schema(operation_id="memories_update", summary="Update a memory", **UPDATE_DOC)
    def put(self, request: Request, memory_id: str) -> Response:
        """New content and/or tags; the previous text becomes a version (GET …/history/)."""
        data = self.UpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        memory, changed = services.memory_update(memory_id=memory_id, actor=actor_name_from_rest(request),
                                                 **data.validated_data)
        return Response(outputs.updated_memory_dict(memory, changed))

    @extend_schema(operation_id="memories_partial_update", summary="Update a memory (PATCH)", **UPDATE_DOC)
    def patch(self, request: Request, memory_id: str) -> Response:
        return self.put(request, memory_id)

    @extend_schema(
        operation_id="memories_retrieve", tags=MEMORIES, summary="Get a memory",
        description="One memory, with the embedding model whose vector it has (null while it waits for one).",
        parameters=[MEMORY_ID_PATH],
        responses={200: answer(outputs.MemoryDetailDict, "the memory", {
            "memory_id": MID, "content": FACT, "timestamp": NOW, "project": None, "tags": ["decision", "money"],
            "metadata": None, "conversation_id": None, "message_id": None, "version": 1, "updated_at": None,
            "superseded_by": None, "superseded_at": None, "embedding_model": "all-MiniLM-L6-v2"})},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        memory = services.memory_get(memory_id=memory_id)
        return Response({**outputs.memory_dict(memory), "embedding_model": services.memory_embedding_model(memory)})

    @extend_schema(
        operation_id="memories_destroy", tags=MEMORIES, summary="Delete a memory",
        description="Deletes a memory and its vector. Only REST and the admin delete memories: the MCP tools never "
                    "do (agents update or supersede them).",
        parameters=[MEMORY_ID_PATH], responses={204: None},
    )
    def delete(self, request: Request, memory_id: str) -> Response:
        services.memory_delete(memory_id=memory_id)
        return Response(status=204)


class MemoryHistoryApi(APIView):
    @extend_schema(
        operation_id="memories_history", tags=MEMORIES, summary="A memory's versions",
        description="Every text and tag set the memory has had, newest first, with when, by whom and why "
                    "(`memory_history`).",
        parameters=[MEMORY_ID_PATH],
        responses={200: answer(outputs.MemoryHistoryDict, "the versions", {
            "memory_id": MID, "project": None, "current_version": 2, "versions": [
                {"version": 2, "current": True, "content": FACT, "tags": ["decision", "money"], "written_at": NOW,
                 "written_by": "alice", "reason": "cents, not floats", "replaced_at": None, "replaced_by": None}]})},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        memory, versions = services.memory_history(memory_id=memory_id)
        return Response(outputs.memory_history_dict(memory, versions))


SEARCH_DESCRIPTION = (
    "Memories by meaning (`search_memory`): relevance 0-100 from cosine similarity, under 30 left out, best "
    "first. A memory not embedded yet is still found (its similarity is computed on the spot); with the "
    "embedding provider down the answer comes from full text (`match: fulltext`). `project`: that project's "
    "memories and the global ones (no project); `project_only`: the project's alone. GET takes the same "
    "parameters in the query string (`tags` repeatable).")
SEARCH_EXAMPLE = {"query": "money amounts", "results": [
    {"memory_id": MID, "content": FACT, "timestamp": NOW, "relevance_score": 71.3, "project": None,
     "tags": ["decision", "money"], "match": "semantic", "matched_superseded": None, "superseded_by": None}],
    "count": 1, "time_filter": None}


class MemorySearchApi(APIView):
    token_scopes = {"POST": access.READ}  # a search, whatever the method
    InputSerializer = inputs.SEARCH.serializer()

    def _search(self, data: dict) -> Response:
        time = timerank.plan(data["query"], as_of=data.pop("as_of", None), recency=data.pop("recency", None))
        hits = services.memory_search(**data, time=time)
        return Response(outputs.search_memory_dict(data["query"], hits, time))

    @extend_schema(
        operation_id="memories_search", tags=MEMORIES, summary="Search memories by meaning",
        description=SEARCH_DESCRIPTION, request=InputSerializer,
        examples=[OpenApiExample("by meaning", request_only=True, value={"query": "money amounts", "limit": 5})],
        responses={200: answer(outputs.SearchMemoryDict, "the memories found", SEARCH_EXAMPLE)},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return self._search(data.validated_data)

    @extend_schema(
        operation_id="memories_search_get", tags=MEMORIES, summary="Search memories by meaning (query string)",
        description=SEARCH_DESCRIPTION, parameters=[InputSerializer],
        responses={200: answer(outputs.SearchMemoryDict, "the memories found", SEARCH_EXAMPLE)},
    )
    def get(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        return self._search(data.validated_data)
