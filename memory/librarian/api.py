"""REST views of the answer cache (/api/v1/cache/…): one APIView per operation."""
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import access
from core.rest import StrictSerializer, answer
from memory.librarian import inputs, outputs, services

CACHE = ["cache"]
QUESTION = "how do we store money amounts"
ANSWER = "As integer cents in a BIGINT column, never as floats."
NOW = "2026-11-24T09:31:40.204417+00:00"
ENTRY = {"query": QUESTION, "project": None, "answer": ANSWER, "cached": True, "cache_tier": "warm",
         "ask_count": 0, "cache_hits": 0, "confidence": 0.95, "feedback_positive": 0, "feedback_negative": 0,
         "pinned": True, "answer_version": 1, "first_asked": NOW, "last_asked": NOW, "expires_at": None}


class CacheAskApi(APIView):
    token_scopes = {"POST": access.READ}  # a read-only token's ask records nothing (services.ask)

    InputSerializer = inputs.ASK.serializer(component="CacheAskInput")

    @extend_schema(
        operation_id="cache_ask", tags=CACHE, summary="Ask the answer cache",
        description="Looks the question up (`librarian_ask`): an exact match of the normalised question, else a "
                    "paraphrase of a warm or hotter entry (cosine distance under the threshold), else a miss "
                    "answered from Winni's own knowledge (hybrid search over messages, memories and medallions). "
                    "Every answer says whether it was cached, its tier, ask count and confidence.",
        request=InputSerializer,
        examples=[OpenApiExample("a question", request_only=True, value={"query": QUESTION})],
        responses={200: answer(outputs.AskDict, "the answer", {
            "answer": ANSWER, "cached": True, "cache_tier": "warm", "ask_count": 3, "confidence": 0.95,
            "match": "exact", "similarity": None, "matched_query": QUESTION, "matched_project": None,
            "answer_version": 1, "compute_time_ms": 0, "expires_at": None, "sources": []})},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(outputs.ask_dict(services.librarian_ask(**data.validated_data)))


class CacheRememberApi(APIView):
    InputSerializer = inputs.REMEMBER.serializer(component="CacheRememberInput")

    @extend_schema(
        operation_id="cache_remember", tags=CACHE, summary="Cache an answer",
        description="Stores the answer to a question (`librarian_remember`): 201 for a new entry, 200 when the "
                    "question was known (its answer is replaced and its version goes up). Pinned answers are "
                    "never evicted and never expire.",
        request=InputSerializer,
        examples=[OpenApiExample("a pinned answer", request_only=True,
                                 value={"query": QUESTION, "answer": ANSWER, "pin": True})],
        responses={201: answer(outputs.RememberedDict, "a new entry", {**ENTRY, "created": True}),
                   200: answer(outputs.RememberedDict, "the known entry, with the new answer",
                               {**ENTRY, "ask_count": 4, "answer_version": 2, "created": False})},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        entry, created = services.librarian_remember(**data.validated_data)
        return Response(outputs.remembered_dict(entry, created), status=201 if created else 200)


class CacheForgetApi(APIView):
    InputSerializer = inputs.FORGET.serializer(component="CacheForgetInput")

    @extend_schema(
        operation_id="cache_forget", tags=CACHE, summary="Forget a cached question",
        description="Removes the question and its answer from the cache (`librarian_forget`); an unknown "
                    "question is a 404.",
        request=InputSerializer,
        examples=[OpenApiExample("a question", request_only=True, value={"query": QUESTION})],
        responses={200: answer(outputs.ForgottenDict, "what was removed",
                               {"forgotten": True, "query": QUESTION, "had_answer": True})},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(outputs.forgotten_dict(services.librarian_forget(**data.validated_data)))


class CacheFeedbackApi(APIView):
    InputSerializer = inputs.FEEDBACK.serializer(component="CacheFeedbackInput")

    @extend_schema(
        operation_id="cache_feedback", tags=CACHE, summary="Rate a cached answer",
        description="Feedback on an answer (`librarian_feedback`). Once the unhelpful votes reach the limit and "
                    "outnumber the helpful ones, the cached answer is dropped (`dropped: true`). An unknown "
                    "question is a 404.",
        request=InputSerializer,
        examples=[OpenApiExample("it helped", request_only=True, value={"query": QUESTION, "helpful": True})],
        responses={200: answer(outputs.FeedbackDict, "the entry after the vote", {**ENTRY, "dropped": False})},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        entry, dropped = services.librarian_feedback(**data.validated_data)
        return Response(outputs.feedback_dict(entry, dropped))


class CacheStatsApi(APIView):
    class InputSerializer(StrictSerializer):
        class Meta:
            ref_name = "CacheStatsInput"

        days = serializers.IntegerField(required=False, min_value=1, max_value=365,
                                        help_text="also return `series`, the hit rate of each of the last N days")

    @extend_schema(
        operation_id="cache_stats", tags=CACHE, summary="Answer cache statistics",
        description="Hit rate, tier distribution, sizes and settings (`librarian_memory_stats`); with `?days=N` "
                    "also `series`, the hit rate per day.",
        parameters=[InputSerializer],
        responses={200: answer(outputs.StatsDict, "the statistics", {
            "asks": 120, "hits": 84, "exact_hits": 70, "semantic_hits": 14, "misses": 36, "hit_rate": 0.7,
            "asks_24h": 12, "hits_24h": 9, "hit_rate_24h": 0.75, "entries": 41, "cached_answers": 18, "pinned": 3,
            "tiers": {"cold": 23, "warm": 10, "hot": 6, "core": 2},
            "cached_by_tier": {"cold": 0, "warm": 10, "hot": 6, "core": 2}, "bytes_per_cached_answer": 412,
            "time_saved_ms": 96400, "max_cached": 10000, "similarity_threshold": 0.15, "ttl_seconds": 86400,
            "series": [{"date": "2026-11-24", "asks": 12, "exact_hits": 8, "semantic_hits": 1, "misses": 3,
                        "hit_rate": 0.75}]})},
    )
    def get(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        stats = services.librarian_memory_stats()
        if "days" in data.validated_data:
            stats["series"] = services.librarian_hit_rate_series(days=data.validated_data["days"])
        return Response(stats)
