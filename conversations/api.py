"""REST views for conversations and orchestration results: one APIView per operation (HS) — a
path that serves two operations has one method per operation, each with its own serializer.
Shapes come from outputs.py; errors from the services go through the one exception handler."""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import outputs, services
from core.rest import StrictSerializer

ROLE_CHOICES = ["user", "assistant", "system", "tool"]
STATUS_CHOICES = ["success", "error"]


def _validated(serializer_class: type[serializers.Serializer], data: object) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class PageSerializer(StrictSerializer):
    limit = serializers.IntegerField(required=False, default=20, min_value=1, max_value=100)
    offset = serializers.IntegerField(required=False, default=0, min_value=0)


class ConversationsApi(APIView):
    """POST: begin a conversation. GET: list conversations."""

    class InputSerializer(StrictSerializer):
        session_id = serializers.CharField(required=False, allow_null=True, max_length=500)
        metadata = serializers.JSONField(required=False, allow_null=True)
        project = serializers.CharField(required=False, allow_null=True, allow_blank=True)

    class ListInputSerializer(PageSerializer):
        session_id = serializers.CharField(required=False, max_length=500)
        sort_by = serializers.ChoiceField(choices=["created_at", "updated_at"], required=False, default="updated_at")
        project = serializers.CharField(required=False)

    @extend_schema(request=InputSerializer, responses={201: dict}, operation_id="conversations_create")
    def post(self, request: Request) -> Response:
        conversation = services.conversation_begin(**_validated(self.InputSerializer, request.data))
        return Response(outputs.begun_dict(conversation), status=201)

    @extend_schema(parameters=[ListInputSerializer], responses={200: dict}, operation_id="conversations_list")
    def get(self, request: Request) -> Response:
        data = _validated(self.ListInputSerializer, request.query_params)
        page, total, estimate = services.conversation_list(**data)
        return Response(outputs.conversation_list_dict(page, total, estimate, data["limit"], data["offset"]))


class SessionConversationListApi(APIView):
    class InputSerializer(PageSerializer):
        sort_by = serializers.ChoiceField(choices=["created_at", "updated_at"], required=False, default="updated_at")
        project = serializers.CharField(required=False)

    @extend_schema(parameters=[InputSerializer], responses={200: dict}, operation_id="sessions_conversations_list")
    def get(self, request: Request, session_id: str) -> Response:
        data = _validated(self.InputSerializer, request.query_params)
        page, total, estimate = services.conversation_list(session_id=session_id, **data)
        return Response(outputs.conversation_list_dict(page, total, estimate, data["limit"], data["offset"]))


class ConversationDetailApi(APIView):
    """GET: the conversation with its messages. DELETE (?force=true): remove it and its messages."""

    class DeleteInputSerializer(StrictSerializer):
        force = serializers.BooleanField(required=False, default=False)

    @extend_schema(responses={200: dict}, operation_id="conversations_retrieve")
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation, messages = services.conversation_get(conversation_id=conversation_id)
        return Response(outputs.conversation_dict(conversation, messages))

    @extend_schema(parameters=[DeleteInputSerializer], responses={200: dict}, operation_id="conversations_destroy")
    def delete(self, request: Request, conversation_id: str) -> Response:
        data = _validated(self.DeleteInputSerializer, request.query_params)
        deleted = services.conversation_delete(conversation_id=conversation_id, force=data["force"])
        return Response(outputs.deleted_dict(conversation_id, deleted))


class MessageStoreApi(APIView):
    class InputSerializer(StrictSerializer):
        role = serializers.ChoiceField(choices=ROLE_CHOICES)
        content = serializers.CharField(trim_whitespace=False, allow_blank=True)
        turn_number = serializers.IntegerField(required=False, allow_null=True, min_value=1)
        metadata = serializers.JSONField(required=False, allow_null=True)
        created_at = serializers.CharField(required=False, allow_null=True)

    @extend_schema(request=InputSerializer, responses={201: dict}, operation_id="conversations_messages_create")
    def post(self, request: Request, conversation_id: str) -> Response:
        data = _validated(self.InputSerializer, request.data)
        message = services.message_store(conversation_id=conversation_id, **data)
        return Response(outputs.stored_message_dict(message), status=201)


class MessagesBulkStoreApi(APIView):
    """Atomic bulk store; creates the conversation when conversation_id is omitted."""

    class InputSerializer(StrictSerializer):
        conversation_id = serializers.CharField(required=False, allow_null=True)
        session_id = serializers.CharField(required=False, allow_null=True, max_length=500)
        metadata = serializers.JSONField(required=False, allow_null=True)
        project = serializers.CharField(required=False, allow_null=True, allow_blank=True)
        # Items are validated by the service, which names the failing item (messages[3].role).
        messages = serializers.ListField(child=serializers.JSONField())

    @extend_schema(request=InputSerializer, responses={201: dict}, operation_id="conversations_messages_bulk_create")
    def post(self, request: Request) -> Response:
        conversation, stored = services.messages_store_bulk(**_validated(self.InputSerializer, request.data))
        return Response(outputs.bulk_stored_dict(conversation, stored), status=201)


class MessageSearchApi(APIView):
    class InputSerializer(PageSerializer):
        query = serializers.CharField(trim_whitespace=False, allow_blank=True)
        session_id = serializers.CharField(required=False, max_length=500)
        conversation_id = serializers.CharField(required=False)
        role = serializers.ChoiceField(choices=ROLE_CHOICES, required=False)
        start_date = serializers.CharField(required=False)
        end_date = serializers.CharField(required=False)
        context_lines = serializers.IntegerField(required=False, default=2, min_value=0, max_value=10)
        mode = serializers.ChoiceField(choices=["fts", "semantic", "hybrid"], required=False, allow_null=True, default=None)
        project = serializers.CharField(required=False)
        as_of = serializers.CharField(required=False)
        recency = serializers.FloatField(required=False)

    @extend_schema(parameters=[InputSerializer], responses={200: dict}, operation_id="messages_search")
    def get(self, request: Request) -> Response:
        page = services.message_search(**_validated(self.InputSerializer, request.query_params))
        return Response(outputs.search_page_dict(page))


# --- Fiedler ---------------------------------------------------------------------------------


class FiedlerResultSerializer(StrictSerializer):
    correlation_id = serializers.CharField(max_length=255)
    model = serializers.CharField(max_length=200)
    output = serializers.CharField(trim_whitespace=False, allow_blank=True)
    prompt = serializers.CharField(required=False, allow_null=True, trim_whitespace=False, allow_blank=True)
    tokens_prompt = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    tokens_completion = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    duration_seconds = serializers.FloatField(required=False, allow_null=True, min_value=0)
    status = serializers.ChoiceField(choices=STATUS_CHOICES, required=False, default="success")
    error_message = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    metadata = serializers.JSONField(required=False, allow_null=True)
    conversation_id = serializers.CharField(required=False, allow_null=True)
    redact = serializers.BooleanField(required=False, default=False)


class FiedlerResultsApi(APIView):
    """POST: store one result. GET: filtered list (model, status, correlation_id, text, dates)."""

    class ListInputSerializer(PageSerializer):
        model = serializers.CharField(required=False, max_length=200)
        status = serializers.ChoiceField(choices=STATUS_CHOICES, required=False)
        correlation_id = serializers.CharField(required=False, max_length=255)
        text = serializers.CharField(required=False, trim_whitespace=False)
        start_date = serializers.CharField(required=False)
        end_date = serializers.CharField(required=False)
        project = serializers.CharField(required=False)

    @extend_schema(request=FiedlerResultSerializer, responses={201: dict}, operation_id="fiedler_results_create")
    def post(self, request: Request) -> Response:
        result = services.fiedler_result_store(**_validated(FiedlerResultSerializer, request.data))
        return Response(outputs.fiedler_stored_dict(result), status=201)

    @extend_schema(parameters=[ListInputSerializer], responses={200: dict}, operation_id="fiedler_results_list")
    def get(self, request: Request) -> Response:
        data = _validated(self.ListInputSerializer, request.query_params)
        results, total, estimate = services.fiedler_results_query(**data)
        return Response(outputs.fiedler_query_dict(results, total, estimate, data["limit"], data["offset"]))


class FiedlerResultsBatchApi(APIView):
    class InputSerializer(StrictSerializer):
        # Items are validated by the service, which names the failing item (results[2].model).
        results = serializers.ListField(child=serializers.JSONField())

    @extend_schema(request=InputSerializer, responses={201: dict}, operation_id="fiedler_results_batch_create")
    def post(self, request: Request) -> Response:
        results = services.fiedler_results_store_batch(**_validated(self.InputSerializer, request.data))
        return Response(outputs.fiedler_batch_dict(results), status=201)


class FiedlerCorrelationApi(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("correlation_id", str, OpenApiParameter.PATH)],
        responses={200: dict},
        operation_id="fiedler_results_by_correlation",
    )
    def get(self, request: Request, correlation_id: str) -> Response:
        results = services.fiedler_results_for_correlation(correlation_id=correlation_id)
        return Response(outputs.fiedler_correlation_dict(correlation_id, results))
