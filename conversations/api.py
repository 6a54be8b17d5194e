"""REST views for conversations: one APIView per operation (HS), shapes from outputs.py."""
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import outputs, services

ROLE_CHOICES = ["user", "assistant", "system", "tool"]


class ConversationBeginApi(APIView):
    class InputSerializer(serializers.Serializer):
        session_id = serializers.CharField(required=False, allow_null=True, max_length=500)
        metadata = serializers.JSONField(required=False, allow_null=True)

    @extend_schema(request=InputSerializer, responses={201: dict}, operation_id="conversations_create")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        conversation = services.conversation_begin(**data.validated_data)
        return Response(outputs.begun_dict(conversation), status=201)


class ConversationDetailApi(APIView):
    @extend_schema(responses={200: dict}, operation_id="conversations_retrieve")
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation, messages = services.conversation_get(conversation_id=conversation_id)
        return Response(outputs.conversation_dict(conversation, messages))


class MessageStoreApi(APIView):
    class InputSerializer(serializers.Serializer):
        role = serializers.ChoiceField(choices=ROLE_CHOICES)
        content = serializers.CharField(trim_whitespace=False, allow_blank=True)
        turn_number = serializers.IntegerField(required=False, allow_null=True, min_value=1)
        metadata = serializers.JSONField(required=False, allow_null=True)
        created_at = serializers.CharField(required=False, allow_null=True)

    @extend_schema(request=InputSerializer, responses={201: dict}, operation_id="conversations_messages_create")
    def post(self, request: Request, conversation_id: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        message = services.message_store(conversation_id=conversation_id, **data.validated_data)
        return Response(outputs.stored_message_dict(message), status=201)
