"""Recall's interfaces. winni_recall (MCP) and REST `GET|POST /api/v1/recall`: one hybrid, ranked
list over every searchable kind (the service is core.recall). winni_context (MCP) and REST
`POST /api/v1/recall/context`: the short block automatic recall adds to a prompt (the service is
winni_site.autorecall). Both span every app, so their interfaces belong to the assembly."""
from typing import Any

from drf_spectacular.utils import extend_schema
from pydantic import Field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access
from core.mcp import McpRegistry, read_tool
from core.recall import LIMIT_DEFAULT, Mode, RecallDict, recall
from core.rest import StrictSerializer
from winni_site.autorecall import ContextDict, context_for_prompt


@read_tool
def winni_recall(
    query: str,
    kinds: list[str] | None = None,
    limit: int = Field(default=LIMIT_DEFAULT),
    mode: Mode = "hybrid",
    session_id: str | None = None,
    conversation_id: str | None = None,
    role: str | None = None,
    tags: list[str] | None = None,
    start_date: str | None = None,
    end_date: str | None = None,
    project: str | None = None,
    include_superseded: bool = False,
    as_of: str | None = None,
    recency: float | None = None,
) -> RecallDict:
    """Search everything Winni keeps (past messages, memories, and any other registered store)
    at once: one ranked list fusing full-text (BM25) and semantic similarity. kinds: restrict to
    some of message, memory, … (default all). limit 1-100 (default 10). session_id,
    conversation_id and role apply to messages, tags to memories (other kinds drop out when
    such a filter is given); start_date/end_date (ISO 8601; a date alone covers the whole day) and project (a project's slug or
    name: only its rows) to every kind. Superseded memories and medallions that are not active are
    left out unless include_superseded (a superseded memory then names its successor). Time words
    in the query ("last week", "in March", "before the migration's date") are read relative to
    as_of (ISO 8601, default now) and rank hits of that time higher; for a question about order
    ("which came first") time_filter.timeline lists the best hits oldest first with their dates;
    recency (a half-life in days) favours newer hits.
    time_filter in the result says what was understood and done."""
    filters = {"session_id": session_id, "conversation_id": conversation_id, "role": role, "tags": tags,
               "start_date": start_date, "end_date": end_date, "project": project}
    return recall(query=query, kinds=kinds, limit=limit, mode=mode, filters=filters,
                  include_superseded=include_superseded, as_of=as_of, recency=recency)


@read_tool
def winni_context(
    prompt: str,
    project: str | None = None,
    session_id: str | None = None,
    max_chars: int | None = None,
) -> ContextDict:
    """What Winni knows about a prompt, as the short block automatic recall adds to it: memories,
    the project's active decisions, invariants and open questions, past turns of other sessions and
    a cached answer to the same question, each with its source (kind, id, date, session, turn).
    Empty (text "") when nothing is relevant enough (see gate). project: a project's slug or name
    (unknown or none: the whole store). session_id: leaves out that session's own turns and what was
    already given to it (then records what it gives). max_chars 200-50000 (default
    WINNI_RECALL_INJECT_MAX_CHARS)."""
    return context_for_prompt(prompt=prompt, project=project, session_id=session_id, max_chars=max_chars)


MCP = McpRegistry(tools=[winni_recall, winni_context])


class RecallApi(APIView):
    token_scopes = {"POST": access.READ}  # a search, whatever the method
    class InputSerializer(StrictSerializer):
        query = serializers.CharField(trim_whitespace=False, allow_blank=True)
        kinds = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)
        limit = serializers.IntegerField(required=False, default=LIMIT_DEFAULT)
        mode = serializers.CharField(required=False, default="hybrid")
        session_id = serializers.CharField(required=False, allow_null=True)
        conversation_id = serializers.CharField(required=False, allow_null=True)
        role = serializers.CharField(required=False, allow_null=True)
        tags = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)
        start_date = serializers.CharField(required=False, allow_null=True)
        end_date = serializers.CharField(required=False, allow_null=True)
        project = serializers.CharField(required=False, allow_null=True)
        include_superseded = serializers.BooleanField(required=False, default=False)
        as_of = serializers.CharField(required=False, allow_null=True, allow_blank=True)
        recency = serializers.FloatField(required=False, allow_null=True)

    def _answer(self, raw: dict[str, Any], *, query_string: bool = False) -> Response:
        data = self.InputSerializer(data=raw, context={"query_string": query_string})
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        head = {name: values.pop(name) for name in ("query", "limit", "mode", "include_superseded")}
        head.update({name: values.pop(name, None) for name in ("as_of", "recency")})
        kinds = values.pop("kinds", None)
        return Response(recall(**head, kinds=kinds, filters=values))

    @extend_schema(request=InputSerializer, responses={200: dict}, operation_id="recall")
    def post(self, request: Request) -> Response:
        return self._answer(request.data)

    @extend_schema(parameters=[InputSerializer], responses={200: dict}, operation_id="recall_get")
    def get(self, request: Request) -> Response:
        raw: dict[str, Any] = request.query_params.dict()
        for name in ("kinds", "tags"):
            if name in request.query_params:
                raw[name] = request.query_params.getlist(name)
        return self._answer(raw, query_string=True)


class RecallContextApi(APIView):
    token_scopes = {"POST": access.READ}  # reads what is stored (and notes what it gave)

    class InputSerializer(StrictSerializer):
        prompt = serializers.CharField(trim_whitespace=False, allow_blank=True, allow_null=True)
        project = serializers.CharField(required=False, allow_null=True, allow_blank=True)
        session_id = serializers.CharField(required=False, allow_null=True, allow_blank=True)
        max_chars = serializers.IntegerField(required=False, allow_null=True)

    @extend_schema(request=InputSerializer, responses={200: dict}, operation_id="recall_context")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(context_for_prompt(**data.validated_data))
