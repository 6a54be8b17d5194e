"""REST views for conversations and orchestration results: one APIView per operation (HS) — a
path that serves two operations has one method per operation, each with its own serializer.
Shapes come from outputs.py; errors from the services go through the one exception handler.
Each operation documents itself (summary, description, tag, examples) for /api/docs/."""
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations import inputs, outputs, services
from conversations.services.fiedler import FIEDLER_BATCH_MAX
from core.rest import (
    StrictSerializer,
    answer,
    uuid_path,
)

CONVERSATIONS = ["conversations"]
FIEDLER = ["fiedler-results"]
CID = "6b0d2457-c3c8-48d6-8bce-07d50d9c9c8c"
MID = "0f8e3a52-5a1c-4b7e-9d0e-2c4f3b1a7e11"
NOW = "2026-11-24T09:15:02.114301+00:00"
CONVERSATION_ID_PATH = uuid_path("conversation_id", "the conversation's id (`conversation_id`)")


def _validated(serializer_class: type[serializers.Serializer], data: object) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class ConversationsApi(APIView):
    """POST: begin a conversation. GET: list conversations."""

    InputSerializer = inputs.BEGIN.serializer()

    ListInputSerializer = inputs.LIST_CONVERSATIONS.serializer(nullable=False)

    @extend_schema(
        operation_id="conversations_create", tags=CONVERSATIONS, summary="Begin a conversation",
        description="Creates an empty conversation (`dewey_begin_conversation`). Store its messages with "
                    "`POST /conversations/{conversation_id}/messages/` or many at once with `POST /conversations/bulk/`.",
        request=InputSerializer,
        examples=[OpenApiExample("a Claude Code session", request_only=True,
                                 value={"session_id": "7d1c9b0e-claude-session", "metadata": {"client": "claude-code"}})],
        responses={201: answer(outputs.BegunDict, "the new conversation",
                               {"conversation_id": CID, "session_id": "7d1c9b0e-claude-session", "project": None,
                                "created_at": NOW})},
    )
    def post(self, request: Request) -> Response:
        conversation = services.conversation_begin(**_validated(self.InputSerializer, request.data))
        return Response(outputs.begun_dict(conversation), status=201)

    @extend_schema(
        operation_id="conversations_list", tags=CONVERSATIONS, summary="List conversations",
        description="A page of conversations, newest first, each with its message count "
                    "(`dewey_list_conversations`). `total` is exact up to 10,000 rows, an estimate beyond "
                    "(`total_is_estimate`).",
        parameters=[ListInputSerializer],
        responses={200: answer(outputs.ConversationListDict, "one page", {
            "conversations": [{"conversation_id": CID, "id": CID, "session_id": "7d1c9b0e-claude-session",
                               "project": "winni", "created_at": NOW, "updated_at": NOW, "message_count": 2,
                               "metadata": {"client": "claude-code"}}],
            "total": 1, "total_is_estimate": False, "limit": 20, "offset": 0})},
    )
    def get(self, request: Request) -> Response:
        data = _validated(self.ListInputSerializer, request.query_params)
        page, total, estimate = services.conversation_list(**data)
        return Response(outputs.conversation_list_dict(page, total, estimate, data["limit"], data["offset"]))


class SessionConversationListApi(APIView):
    InputSerializer = inputs.LIST_CONVERSATIONS.serializer(without=["session_id"], nullable=False)

    @extend_schema(
        operation_id="sessions_conversations_list", tags=CONVERSATIONS, summary="List one session's conversations",
        description="The conversations stored under one `session_id`, newest first (the same page as "
                    "`GET /conversations/?session_id=`).",
        parameters=[InputSerializer, inputs.SESSION_ID.path_parameter("session_id", "the session id")],
        responses={200: answer(outputs.ConversationListDict, "one page", {
            "conversations": [{"conversation_id": CID, "id": CID, "session_id": "7d1c9b0e-claude-session",
                               "project": "winni", "created_at": NOW, "updated_at": NOW, "message_count": 2,
                               "metadata": None}],
            "total": 1, "total_is_estimate": False, "limit": 20, "offset": 0})},
    )
    def get(self, request: Request, session_id: str) -> Response:
        data = _validated(self.InputSerializer, request.query_params)
        page, total, estimate = services.conversation_list(session_id=session_id, **data)
        return Response(outputs.conversation_list_dict(page, total, estimate, data["limit"], data["offset"]))


class ConversationDetailApi(APIView):
    """GET: the conversation with its messages. DELETE (?force=true): remove it and its messages."""

    DeleteInputSerializer = inputs.DELETE.serializer(without=["conversation_id"], nullable=False)

    InputSerializer = inputs.GET_CONVERSATION.serializer(without=["conversation_id"], nullable=False)

    @extend_schema(
        operation_id="conversations_retrieve", tags=CONVERSATIONS, summary="Get a conversation with its messages",
        description="The conversation and its messages in turn order (`dewey_get_conversation`), or those from "
                    "`turn_from` to `turn_to`. The messages' content is cut so that the JSON holds at most "
                    "`max_chars` characters (`truncated`, `content_length`); one turn asked alone is read whole "
                    "up to that.",
        parameters=[CONVERSATION_ID_PATH, InputSerializer],
        responses={200: answer(outputs.ConversationDict, "the conversation", {
            "conversation_id": CID, "session_id": "7d1c9b0e-claude-session", "project": None, "created_at": NOW,
            "updated_at": NOW, "metadata": None,
            "messages": [{"message_id": MID, "id": MID, "turn": 1, "role": "user",
                          "content": "How do we store money amounts?", "truncated": False, "content_length": 30,
                          "metadata": None, "created_at": NOW}]})},
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        data = _validated(self.InputSerializer, request.query_params)
        conversation, messages = services.conversation_get(conversation_id=conversation_id, **data)
        return Response(outputs.conversation_dict(conversation, messages, data["max_chars"]))

    @extend_schema(
        operation_id="conversations_destroy", tags=CONVERSATIONS, summary="Delete a conversation",
        description="Deletes the conversation, its messages and their search entries. Needs `force=true`; "
                    "Fiedler results that pointed to it stay, unlinked.",
        parameters=[CONVERSATION_ID_PATH, DeleteInputSerializer],
        responses={200: answer(outputs.DeletedDict, "what was deleted",
                               {"deleted": True, "conversation_id": CID, "messages_deleted": 2})},
    )
    def delete(self, request: Request, conversation_id: str) -> Response:
        data = _validated(self.DeleteInputSerializer, request.query_params)
        deleted = services.conversation_delete(conversation_id=conversation_id, force=data["force"])
        return Response(outputs.deleted_dict(conversation_id, deleted))


class MessageStoreApi(APIView):
    InputSerializer = inputs.STORE_MESSAGE.serializer(without=["conversation_id"])

    @extend_schema(
        operation_id="conversations_messages_create", tags=CONVERSATIONS, summary="Store one message",
        description="Appends a message (`dewey_store_message`). Without `turn_number` the server takes the next "
                    "turn under a lock, so concurrent writers get unique, gapless turns; a given turn that exists "
                    "is a 409 and never overwritten.",
        parameters=[CONVERSATION_ID_PATH], request=InputSerializer,
        examples=[OpenApiExample("a user prompt", request_only=True,
                                 value={"role": "user", "content": "How do we store money amounts?"})],
        responses={201: answer(outputs.StoredMessageDict, "the stored message",
                               {"message_id": MID, "conversation_id": CID, "turn_number": 1, "created_at": NOW})},
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        data = _validated(self.InputSerializer, request.data)
        message = services.message_store(conversation_id=conversation_id, **data)
        return Response(outputs.stored_message_dict(message), status=201)


class MessagesBulkStoreApi(APIView):
    """Atomic bulk store; creates the conversation when conversation_id is omitted."""

    InputSerializer = inputs.STORE_MESSAGES_BULK.serializer()

    @extend_schema(
        operation_id="conversations_messages_bulk_create", tags=CONVERSATIONS, summary="Store many messages at once",
        description="Stores up to 1,000 messages in one transaction: all or none (`dewey_store_messages_bulk`). "
                    "One bad message and nothing is stored; the error names it (`messages[3].role`). Without "
                    "`conversation_id` a new conversation is created with `session_id`, `metadata` and `project`; "
                    "with it, those must be omitted. Each message may carry its own `created_at` (a back-fill).",
        request=InputSerializer,
        examples=[OpenApiExample("a new conversation with two turns", request_only=True, value={
            "session_id": "import-2026-11-24", "metadata": {"source": "import"},
            "messages": [
                {"role": "user", "content": "How do we store money amounts?",
                 "created_at": "2026-11-20T10:00:00Z"},
                {"role": "assistant", "content": "As integer cents in a BIGINT column, never floats.",
                 "metadata": {"model": "claude"}, "created_at": "2026-11-20T10:00:05Z"},
            ]})],
        responses={201: answer(outputs.BulkStoredDict, "what was stored", {
            "conversation_id": CID, "stored": 2, "message_ids": [MID, "5c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5"],
            "first_turn": 1, "last_turn": 2})},
    )
    def post(self, request: Request) -> Response:
        conversation, stored = services.messages_store_bulk(**_validated(self.InputSerializer, request.data))
        return Response(outputs.bulk_stored_dict(conversation, stored), status=201)


class MessageSearchApi(APIView):
    InputSerializer = inputs.SEARCH.serializer(nullable=False)

    @extend_schema(
        operation_id="messages_search", tags=CONVERSATIONS, summary="Search messages",
        description="Ranked search over stored messages (`dewey_search`): full text, semantic or hybrid, with "
                    "filters, a highlighted snippet and the surrounding messages of each hit. A query of stop "
                    "words only finds nothing; a start after the end is an empty range. The messages' content "
                    "is cut so that the page's JSON holds at most `max_chars` characters (`truncated`, "
                    "`content_length`).",
        parameters=[InputSerializer],
        responses={200: answer(outputs.SearchPageDict, "one page of hits, best first", {
            "query": "money amounts", "total": 1, "total_is_estimate": False, "limit": 20, "offset": 0, "mode": "hybrid",
            "time_filter": None,
            "results": [{"conversation_id": CID, "message_id": MID, "turn": 1, "role": "user",
                         "content": "How do we store money amounts?", "truncated": False, "content_length": 30,
                         "rank": 0.912,
                         "snippet": "How do we store <b>money</b> <b>amounts</b>?", "created_at": NOW,
                         "session_id": "7d1c9b0e-claude-session", "project": "winni", "conversation_metadata": None,
                         "context": [{"message_id": "5c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5", "turn": 2,
                                      "role": "assistant", "content": "As integer cents, never floats.",
                                      "truncated": False, "created_at": NOW}]}]})},
    )
    def get(self, request: Request) -> Response:
        page = services.message_search(**_validated(self.InputSerializer, request.query_params))
        return Response(outputs.search_page_dict(page))


# --- Fiedler ---------------------------------------------------------------------------------


FIEDLER_RESULT = "FiedlerResult"  # the OpenAPI component of one result, a batch's items too
FiedlerResultSerializer = inputs.STORE_FIEDLER_RESULT.serializer(name="FiedlerResultSerializer", component=FIEDLER_RESULT)


FIEDLER_EXAMPLE = {"correlation_id": "fanout-2026-11-24-001", "model": "gpt-5", "prompt": "Summarise the diff",
                   "output": "The diff renames Money.amount to amount_cents.", "tokens_prompt": 812,
                   "tokens_completion": 64, "duration_seconds": 2.4, "status": "success",
                   "metadata": {"temperature": 0.2}}
FIEDLER_STORED = {"result_id": MID, "id": MID, "correlation_id": "fanout-2026-11-24-001", "created_at": NOW,
                  "prompt_redacted": False}
FIEDLER_ROW = {"result_id": MID, "id": MID, **FIEDLER_EXAMPLE, "error_message": None, "conversation_id": None,
               "created_at": NOW}


class FiedlerResultsApi(APIView):
    """POST: store one result. GET: filtered list (model, status, correlation_id, text, dates)."""

    ListInputSerializer = inputs.QUERY_FIEDLER_RESULTS.serializer(nullable=False)

    @extend_schema(
        operation_id="fiedler_results_create", tags=FIEDLER, summary="Store one orchestration result",
        description="Stores one model's answer in a fan-out (`dewey_store_fiedler_result`), grouped by "
                    "`correlation_id`.",
        request=FiedlerResultSerializer,
        examples=[OpenApiExample("one model's answer", request_only=True, value=FIEDLER_EXAMPLE)],
        responses={201: answer(outputs.FiedlerStoredDict, "the stored result", FIEDLER_STORED)},
    )
    def post(self, request: Request) -> Response:
        result = services.fiedler_result_store(**_validated(FiedlerResultSerializer, request.data))
        return Response(outputs.fiedler_stored_dict(result), status=201)

    @extend_schema(
        operation_id="fiedler_results_list", tags=FIEDLER, summary="Query orchestration results",
        description="Results filtered by model, status, correlation id, dates and full text of prompt and output "
                    "(`dewey_query_fiedler_results`), newest first.",
        parameters=[ListInputSerializer],
        responses={200: answer(outputs.FiedlerQueryDict, "one page", {
            "results": [FIEDLER_ROW], "total": 1, "total_is_estimate": False, "limit": 20, "offset": 0})},
    )
    def get(self, request: Request) -> Response:
        data = _validated(self.ListInputSerializer, request.query_params)
        results, total, estimate = services.fiedler_results_query(**data)
        return Response(outputs.fiedler_query_dict(results, total, estimate, data["limit"], data["offset"]))


# The batch's items are documented as the one result POST /fiedler-results/ takes (its component, from
# inputs.STORE_FIEDLER_RESULT); the service checks each.
@extend_schema_field({"type": "array", "items": {"$ref": f"#/components/schemas/{FIEDLER_RESULT}Request"},
                      "minItems": 1, "maxItems": FIEDLER_BATCH_MAX})
class FiedlerItemsField(serializers.ListField):
    """The results as JSON: the service checks each and names the failing one (results[2].model)."""

    child = serializers.JSONField()


class FiedlerResultsBatchApi(APIView):
    class InputSerializer(StrictSerializer):
        results = FiedlerItemsField(help_text=f"1-{FIEDLER_BATCH_MAX} results")

    @extend_schema(
        operation_id="fiedler_results_batch_create", tags=FIEDLER, summary="Store many orchestration results",
        description="Stores up to 100 results in one transaction: all or none; the error names the failing item "
                    "(`results[2].model`).",
        request=InputSerializer,
        examples=[OpenApiExample("two models' answers", request_only=True, value={"results": [
            FIEDLER_EXAMPLE, {**FIEDLER_EXAMPLE, "model": "claude-opus", "output": "It renames a field."}]})],
        responses={201: answer(outputs.FiedlerBatchDict, "the stored results",
                               {"stored": 1, "results": [FIEDLER_STORED]})},
    )
    def post(self, request: Request) -> Response:
        results = services.fiedler_results_store_batch(**_validated(self.InputSerializer, request.data))
        return Response(outputs.fiedler_batch_dict(results), status=201)


class FiedlerCorrelationApi(APIView):
    @extend_schema(
        operation_id="fiedler_results_by_correlation", tags=FIEDLER, summary="Get one fan-out's results",
        description="Every result stored under a correlation id, oldest first (`dewey_get_fiedler_results`); an "
                    "unknown id is a 404.",
        parameters=[inputs.GET_FIEDLER_RESULTS["correlation_id"].path_parameter("correlation_id")],
        responses={200: answer(outputs.FiedlerCorrelationDict, "the results",
                               {"correlation_id": "fanout-2026-11-24-001", "results": [FIEDLER_ROW]})},
    )
    def get(self, request: Request, correlation_id: str) -> Response:
        results = services.fiedler_results_for_correlation(correlation_id=correlation_id)
        return Response(outputs.fiedler_correlation_dict(correlation_id, results))
