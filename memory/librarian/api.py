"""REST views of the answer cache (/api/v1/cache/…): one APIView per operation."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.rest import StrictSerializer
from memory.librarian import outputs, services


class _QuerySerializer(StrictSerializer):
    query = serializers.CharField(trim_whitespace=False, allow_blank=True)
    project = serializers.CharField(required=False, allow_null=True, allow_blank=True, default=None)


class CacheAskApi(APIView):
    class InputSerializer(_QuerySerializer):
        class Meta:
            ref_name = "CacheAskInput"

    @extend_schema(request=InputSerializer, responses={200: dict}, operation_id="cache_ask")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(outputs.ask_dict(services.librarian_ask(**data.validated_data)))


class CacheRememberApi(APIView):
    class InputSerializer(_QuerySerializer):
        class Meta:
            ref_name = "CacheRememberInput"

        answer = serializers.CharField(trim_whitespace=False, allow_blank=True)
        pin = serializers.BooleanField(required=False, default=False)

    @extend_schema(request=InputSerializer, responses={200: dict, 201: dict}, operation_id="cache_remember")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        entry, created = services.librarian_remember(**data.validated_data)
        return Response(outputs.remembered_dict(entry, created), status=201 if created else 200)


class CacheForgetApi(APIView):
    class InputSerializer(_QuerySerializer):
        class Meta:
            ref_name = "CacheForgetInput"

    @extend_schema(request=InputSerializer, responses={200: dict}, operation_id="cache_forget")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(outputs.forgotten_dict(services.librarian_forget(**data.validated_data)))


class CacheFeedbackApi(APIView):
    class InputSerializer(_QuerySerializer):
        class Meta:
            ref_name = "CacheFeedbackInput"

        helpful = serializers.BooleanField()

    @extend_schema(request=InputSerializer, responses={200: dict}, operation_id="cache_feedback")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        entry, dropped = services.librarian_feedback(**data.validated_data)
        return Response(outputs.feedback_dict(entry, dropped))


class CacheStatsApi(APIView):
    class InputSerializer(StrictSerializer):
        class Meta:
            ref_name = "CacheStatsInput"

        days = serializers.IntegerField(required=False, min_value=1, max_value=365)

    @extend_schema(parameters=[InputSerializer], responses={200: dict}, operation_id="cache_stats")
    def get(self, request: Request) -> Response:
        """The statistics; with ?days=N also `series`, the hit rate per day."""
        data = self.InputSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        stats = services.librarian_memory_stats()
        if "days" in data.validated_data:
            stats["series"] = services.librarian_hit_rate_series(days=data.validated_data["days"])
        return Response(stats)
