"""Recall's interfaces. winni_recall (MCP) and REST `GET|POST /api/v1/recall`: one hybrid, ranked
list over every searchable kind (the service is core.recall). It spans every app, so its
interfaces belong to the assembly; automatic recall's (winni_context, `POST /api/v1/recall/context`)
are the agents' (agents/mcp.py, agents/api.py)."""
from typing import Any, cast

from drf_spectacular.utils import OpenApiExample, extend_schema
from pydantic import Field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access, searchable
from core.mcp import McpRegistry, read_tool
from core.recall import (
    LIMIT_DEFAULT,
    LIMIT_MAX,
    MODES,
    Detail,
    ItemDict,
    Mode,
    RecallDict,
    get_item,
    recall,
)
from core.rest import (
    DateBoundField,
    ProjectField,
    SearchQueryField,
    StrictSerializer,
    UuidTextField,
    answer,
    as_of_field,
    project_only_field,
    recency_field,
)


@read_tool
def winni_recall(
    query: str,
    kinds: list[str] | None = None,
    limit: int = Field(default=LIMIT_DEFAULT, ge=1, le=LIMIT_MAX),
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
    project_only: bool = False,
    detail: Detail = "compact",
) -> dict[str, Any]:  # CompactRecallDict, or RecallDict with detail=full: an object either way (no wrapping)
    """Search everything kept (messages, memories, medallions, startup contexts), best first, as
    compact rows (a line, "…" when cut; tokens: the item's size): winni_get reads one whole.
    detail=full: texts and scores. kinds: message, memory, medallion, context. Time words ("last
    week") are read as of as_of; recency: a half-life in days."""
    # session_id, conversation_id and role apply to messages, tags to memories (the other kinds drop
    # out with such a filter); project also takes the global memories and contexts unless
    # project_only; a question about order ("which came first") gets time_filter.timeline.
    filters = {"session_id": session_id, "conversation_id": conversation_id, "role": role, "tags": tags,
               "start_date": start_date, "end_date": end_date, "project": project}
    return cast(dict[str, Any], recall(query=query, kinds=kinds, limit=limit, mode=mode, filters=filters,
                                       include_superseded=include_superseded, as_of=as_of, recency=recency,
                                       project_only=project_only, detail=detail))


@read_tool
def winni_get(kind: str, id: str) -> ItemDict:
    """A winni_recall row's item whole (its kind and id); a message's conversation and turn lead
    to the turns around it (dewey_get_conversation)."""
    return get_item(kind=kind, item_id=id)


MCP = McpRegistry(tools=[winni_recall, winni_get])


RECALL_DESCRIPTION = (
    "Everything Winni keeps at once (`winni_recall`): past messages, memories, medallions, startup contexts "
    "and any other registered kind, in one ranked list fusing full-text (BM25) and semantic similarity. "
    "`session_id`, `conversation_id` and `role` apply to messages and `tags` to memories (the other kinds drop "
    "out when such a filter is given); `start_date`, `end_date` and `project` apply to every kind: a project's "
    "rows, and the memories and startup contexts of no project, which apply in every project, unless "
    "`project_only`. With the "
    "embedding provider down, hybrid answers from full text and says `degraded: true`. GET takes the same "
    "parameters in the query string (`kinds` and `tags` repeatable).")
RECALL_EXAMPLE = {
    "query": "how do we store money amounts", "mode": "hybrid", "kinds": ["message", "memory"], "count": 1,
    "degraded": False, "time_filter": None,
    "results": [{"kind": "memory", "id": "9a4f6c1e-2b3d-4e5f-8a9b-0c1d2e3f4a5b",
                 "label": "Money amounts are stored as integer cents (BIGINT), never as floats.",
                 "text": "Money amounts are stored as integer cents (BIGINT), never as floats.",
                 "snippet": "Money amounts are stored as integer cents (BIGINT), never as floats.",
                 "created_at": "2026-11-24T09:20:11.530112+00:00", "score": 0.912,
                 "scores": {"fused": 0.912, "fts": 0.61, "fts_rank": 1, "vector_similarity": 0.7131,
                            "vector_rank": 1, "context": 0.0},
                 "conversation_id": None, "turn": None, "superseded_by": None, "stale": None, "question": None}]}


class RecallApi(APIView):
    token_scopes = {"POST": access.READ}  # a search, whatever the method
    class InputSerializer(StrictSerializer):
        query = SearchQueryField(help_text="what to look for, in plain words (at most 10,000 characters, 413 beyond)")
        kinds = serializers.ListField(child=serializers.ChoiceField(choices=[]), required=False, allow_null=True,
                                      help_text="only these kinds (default: all)")
        limit = serializers.IntegerField(required=False, default=LIMIT_DEFAULT, min_value=1, max_value=LIMIT_MAX,
                                         help_text=f"1-{LIMIT_MAX} (default {LIMIT_DEFAULT})")
        mode = serializers.ChoiceField(choices=list(MODES), required=False, default="hybrid")
        session_id = serializers.CharField(required=False, allow_null=True, trim_whitespace=False, max_length=500,
                                           help_text="messages of this session only")
        conversation_id = UuidTextField(required=False, allow_null=True, help_text="messages of this conversation only")
        role = serializers.CharField(required=False, allow_null=True, help_text="messages of this role only")
        tags = serializers.ListField(child=serializers.CharField(trim_whitespace=False), required=False,
                                     allow_null=True, help_text="memories carrying all of these only")
        start_date = DateBoundField(required=False, allow_null=True, help_text="ISO 8601 date or date-time, inclusive")
        end_date = DateBoundField(required=False, allow_null=True,
                                  help_text="ISO 8601 date (the whole day) or date-time, inclusive")
        project = ProjectField(required=False, allow_null=True,
                               help_text="this project's rows, and the global memories and startup contexts")
        project_only = project_only_field()
        include_superseded = serializers.BooleanField(required=False, default=False,
                                                      help_text="also memories a newer one superseded")
        as_of = as_of_field(allow_null=True)
        recency = recency_field(allow_null=True)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # The kinds are registered by the apps (AppConfig.ready), so they are read here, not at import.
            kinds = self.fields["kinds"]
            assert isinstance(kinds, serializers.ListField) and isinstance(kinds.child, serializers.ChoiceField)
            kinds.child.choices = searchable.kinds()

    def _answer(self, raw: Any) -> Response:
        data = self.InputSerializer(data=raw)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        head = {name: values.pop(name) for name in ("query", "limit", "mode", "include_superseded", "project_only")}
        head.update({name: values.pop(name, None) for name in ("as_of", "recency")})
        kinds = values.pop("kinds", None)
        return Response(recall(**head, kinds=kinds, filters=values))

    @extend_schema(
        operation_id="recall", tags=["recall"], summary="Recall everything about a question",
        description=RECALL_DESCRIPTION, request=InputSerializer,
        examples=[OpenApiExample("messages and memories", request_only=True,
                                 value={"query": "how do we store money amounts", "kinds": ["message", "memory"],
                                        "limit": 10})],
        responses={200: answer(RecallDict, "one ranked list, best first", RECALL_EXAMPLE)},
    )
    def post(self, request: Request) -> Response:
        return self._answer(request.data)

    @extend_schema(
        operation_id="recall_get", tags=["recall"], summary="Recall everything about a question (query string)",
        description=RECALL_DESCRIPTION, parameters=[InputSerializer],
        responses={200: answer(RecallDict, "one ranked list, best first", RECALL_EXAMPLE)},
    )
    def get(self, request: Request) -> Response:
        return self._answer(request.query_params)
