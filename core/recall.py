"""winni_recall: one hybrid, ranked list over every searchable kind (messages, memories, and
whatever else registers in winni_site.searchable: medallions, startup contexts …).

Each kind contributes its BM25 full-text hits and its nearest vectors (the active embedding
model); memory.retrieval fuses them (min-max scaled scores, weighted). Served as the MCP tool
`winni_recall` and as REST `GET|POST /api/v1/recall`."""
from typing import Any, Literal, TypedDict

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from mcp.server.mcpserver import MCPServer
from pydantic import Field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.services import message_surroundings
from memory import retrieval
from memory.embeddings import EmbeddingUnavailable
from winni_site import searchable
from winni_site.errors import InvalidInput
from winni_site.logs import storage_op
from winni_site.mcp_support import service_tool

LIMIT_DEFAULT = 10
LIMIT_MAX = 100
SNIPPET_CHARS = 300
TEXT_CHARS = 2000

# Filters that only some kinds can honour: a kind that cannot is left out of the search.
# name → {kind: ORM lookup}
KIND_FILTERS: dict[str, dict[str, str]] = {
    "session_id": {"message": "conversation__session_id"},
    "conversation_id": {"message": "conversation_id"},
    "role": {"message": "role"},
    "tags": {"memory": "tags__contains"},
}


class ScoreDict(TypedDict):
    fused: float
    fts: float | None
    fts_rank: int | None
    vector_similarity: float | None
    vector_rank: int | None
    context: float


class RecallHitDict(TypedDict):
    kind: str
    id: str
    label: str
    text: str
    snippet: str
    created_at: str | None
    score: float
    scores: ScoreDict
    conversation_id: str | None
    turn: int | None


class RecallDict(TypedDict):
    query: str
    mode: str
    kinds: list[str]
    results: list[RecallHitDict]
    count: int
    degraded: bool


def _validate(query: Any, kinds: Any, limit: Any, mode: Any) -> tuple[str, list[str], int, str]:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query: query must not be empty or whitespace", field="query")
    known = searchable.kinds()
    if kinds is None or kinds == []:
        kinds = known
    if not isinstance(kinds, list) or any(kind not in known for kind in kinds):
        bad = [kind for kind in kinds if kind not in known] if isinstance(kinds, list) else kinds
        raise InvalidInput(f"kinds: unknown kind {bad!r}; known kinds are {', '.join(known)}", field="kinds")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= LIMIT_MAX:
        raise InvalidInput(f"limit must be between 1 and {LIMIT_MAX}, got {limit!r}", field="limit")
    if mode not in retrieval.MODES:
        raise InvalidInput(f"mode must be one of {', '.join(retrieval.MODES)}, got {mode!r}", field="mode")
    return query.strip(), list(dict.fromkeys(kinds)), limit, mode


def _parse_date(value: Any, field: str) -> Any:
    from conversations.services import parse_timestamp

    return parse_timestamp(value, field=field)


def recall_scopes(kinds: list[str], filters: dict[str, Any]) -> tuple[dict[str, QuerySet], dict[str, bool]]:
    """Per kind, the rows it may return under `filters`; kinds that cannot honour a filter drop out."""
    start = _parse_date(filters.get("start_date"), "start_date")
    end = _parse_date(filters.get("end_date"), "end_date")
    scopes: dict[str, QuerySet] = {}
    narrowed: dict[str, bool] = {}
    for kind in kinds:
        model = searchable.get(kind).model
        lookups: dict[str, Any] = {}
        usable = True
        for name, per_kind in KIND_FILTERS.items():
            value = filters.get(name)
            if value in (None, "", []):
                continue
            if kind not in per_kind:
                usable = False
                break
            lookups[per_kind[kind]] = value
        field_names = {f.name for f in model._meta.get_fields()}
        if (start or end) and "created_at" not in field_names:
            usable = False
        if not usable:
            continue
        if start:
            lookups["created_at__gte"] = start
        if end:
            lookups["created_at__lte"] = end
        queryset = model.objects.all()
        if lookups:
            queryset = queryset.filter(**lookups)
        scopes[kind] = queryset
        narrowed[kind] = bool(lookups)
    return scopes, narrowed


SURROUND: dict[str, retrieval.Surround] = {"message": message_surroundings}  # per kind, optional


def _hit_dict(hit: retrieval.Hit) -> RecallHitDict:
    spec = searchable.get(hit.kind)
    obj = hit.obj
    text = spec.text(obj) or ""
    created = getattr(obj, "created_at", None)
    conversation_id = getattr(obj, "conversation_id", None) if hit.kind == "message" else None
    turn = getattr(obj, "turn_number", None) if hit.kind == "message" else None
    return {
        "kind": hit.kind,
        "id": hit.key,
        "label": spec.label(obj),
        "text": text[:TEXT_CHARS],
        "snippet": text[:SNIPPET_CHARS],
        "created_at": created.isoformat() if created else None,
        "score": round(hit.fused, 6),
        "scores": {
            "fused": round(hit.fused, 6),
            "fts": None if hit.fts_score is None else round(hit.fts_score, 4),
            "fts_rank": hit.fts_rank,
            "vector_similarity": None if hit.similarity is None else round(hit.similarity, 4),
            "vector_rank": hit.vector_rank,
            "context": round(hit.context, 6),
        },
        "conversation_id": str(conversation_id) if conversation_id else None,
        "turn": turn,
    }


def recall(
    *,
    query: str,
    kinds: list[str] | None = None,
    limit: int = LIMIT_DEFAULT,
    mode: str = "hybrid",
    filters: dict[str, Any] | None = None,
) -> RecallDict:
    query, kinds, limit, mode = _validate(query, kinds, limit, mode)
    scopes, narrowed = recall_scopes(kinds, filters or {})
    degraded = False
    with storage_op("recall", mode=mode, kinds=",".join(kinds), limit=limit) as log:
        try:
            hits = retrieval.search(query=query, scopes=scopes, filtered=narrowed, limit=limit, mode=mode,  # type: ignore[arg-type]
                                    surround=SURROUND)
        except EmbeddingUnavailable:
            # semantic needs the provider; say so and answer lexically rather than not at all.
            degraded = True
            hits = retrieval.search(query=query, scopes=scopes, filtered=narrowed, limit=limit, mode="fts")
        log["results"] = len(hits)
    results = [_hit_dict(hit) for hit in hits]
    return {"query": query, "mode": mode, "kinds": kinds, "results": results, "count": len(results),
            "degraded": degraded}


# --- MCP -------------------------------------------------------------------------------------


def register(mcp: MCPServer) -> None:
    @mcp.tool()
    @service_tool
    def winni_recall(
        query: str,
        kinds: list[str] | None = None,
        limit: int = Field(default=LIMIT_DEFAULT),
        mode: Literal["fts", "semantic", "hybrid"] = "hybrid",
        session_id: str | None = None,
        conversation_id: str | None = None,
        role: str | None = None,
        tags: list[str] | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
    ) -> RecallDict:
        """Search everything Winni keeps (past messages, memories, and any other registered store)
        at once: one ranked list fusing full-text (BM25) and semantic similarity. kinds: restrict to
        some of message, memory, … (default all). limit 1-100 (default 10). session_id,
        conversation_id and role apply to messages, tags to memories (other kinds drop out when
        such a filter is given); start_date/end_date (ISO 8601) to every kind."""
        filters = {"session_id": session_id, "conversation_id": conversation_id, "role": role, "tags": tags,
                   "start_date": start_date, "end_date": end_date}
        return recall(query=query, kinds=kinds, limit=limit, mode=mode, filters=filters)


# --- REST ------------------------------------------------------------------------------------


class RecallApi(APIView):
    class InputSerializer(serializers.Serializer):
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

    def _answer(self, raw: dict[str, Any]) -> Response:
        data = self.InputSerializer(data=raw)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        head = {name: values.pop(name) for name in ("query", "limit", "mode")}
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
        return self._answer(raw)
