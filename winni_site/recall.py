"""Recall's interfaces. winni_recall (MCP) and REST `GET|POST /api/v1/recall`: one hybrid, ranked
list over every searchable kind (the service is core.recall). It spans every app, so its
interfaces belong to the assembly; automatic recall's (winni_context, `POST /api/v1/recall/context`)
are the agents' (agents/mcp.py, agents/api.py)."""
from typing import Any, cast

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access, searchable
from core.inputs import AS_OF, PROJECT_ONLY, RECENCY, Input, Inputs
from core.mcp import McpRegistry, read_tool
from core.recall import (
    LIMIT_DEFAULT,
    LIMIT_MAX,
    Detail,
    ItemDict,
    Mode,
    RecallDict,
    get_item,
    recall,
)
from core.rest import DateBoundField, ProjectField, SearchQueryField, UuidTextField, answer

# The inputs of winni_recall and REST recall. session_id, conversation_id and role apply to
# messages, tags to memories (the other kinds drop out with such a filter); project also takes the
# global memories and contexts unless project_only.
RECALL = Inputs(
    query=Input(str, field=SearchQueryField,
                help="what to look for, in plain words (at most 10,000 characters, 413 beyond)"),
    kinds=Input(list[str], default=None, choices=searchable.kinds, help="only these kinds (default: all)"),
    limit=Input(int, default=LIMIT_DEFAULT, minimum=1, maximum=LIMIT_MAX, help=f"1-{LIMIT_MAX} (default {LIMIT_DEFAULT})"),
    mode=Input(Mode, default="hybrid"),
    session_id=Input(str, default=None, max_length=500, help="messages of this session only"),
    conversation_id=Input(str, default=None, field=UuidTextField, help="messages of this conversation only"),
    role=Input(str, default=None, rest={"trim_whitespace": True}, help="messages of this role only"),
    tags=Input(list[str], default=None, help="memories carrying all of these only"),
    start_date=Input(str, default=None, field=DateBoundField, help="ISO 8601 date or date-time, inclusive"),
    end_date=Input(str, default=None, field=DateBoundField,
                   help="ISO 8601 date (the whole day) or date-time, inclusive"),
    project=Input(str, default=None, field=ProjectField,
                  help="this project's rows, and the global memories and startup contexts"),
    include_superseded=Input(bool, default=False, help="also memories a newer one superseded"),
    as_of=AS_OF,
    recency=RECENCY,
    project_only=PROJECT_ONLY,
    # MCP only: REST answers in full.
    detail=Input(Detail, default="compact"),
)
FILTERS = ("session_id", "conversation_id", "role", "tags", "start_date", "end_date", "project")


def recall_given(given: dict[str, Any]) -> dict[str, Any]:
    """core.recall.recall's keyword arguments from RECALL's values (an omitted filter is no filter)."""
    return {**{name: value for name, value in given.items() if name not in FILTERS},
            "filters": {name: given.get(name) for name in FILTERS}}


@read_tool
@RECALL.tool
def winni_recall(**given: Any) -> dict[str, Any]:  # CompactRecallDict, or RecallDict with detail=full
    """Search everything kept (messages, memories, medallions, startup contexts), best first, as
    compact rows (a line, "…" when cut; tokens: the item's size): winni_get reads one whole.
    detail=full: texts and scores. kinds: message, memory, medallion, context. Time words ("last
    week") are read as of as_of; recency: a half-life in days."""
    # A question about order ("which came first") gets time_filter.timeline.
    return cast(dict[str, Any], recall(**recall_given(given)))


@read_tool
def winni_get(kind: str, id: str) -> ItemDict:
    """A winni_recall row's item whole (its kind and id, or the first 8 hex digits of the id as
    automatic recall names it); a message's conversation and turn lead to the turns around it
    (dewey_get_conversation)."""
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
    InputSerializer = RECALL.serializer(without=["detail"])

    def _answer(self, raw: Any) -> Response:
        data = self.InputSerializer(data=raw)
        data.is_valid(raise_exception=True)
        return Response(recall(**recall_given({**data.validated_data, "detail": "full"})))

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
