"""REST endpoints the Claude Code hook program calls (winni_site/claude_hook.py)."""
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.actors import actor_name_from_rest
from core.errors import ApplicationError
from core.rest import StrictSerializer
from winni_site import agent_dialects, capture

REPOSITORY_PARAMETERS = ("git_root", "remote", "root_commit")


class HookEventSerializer(StrictSerializer):
    payload = serializers.JSONField(help_text="the hook's stdin, unchanged")
    event_id = serializers.CharField(required=False, allow_null=True, max_length=100)
    captured_at = serializers.CharField(required=False, allow_null=True, max_length=60)
    git_branch = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=300)
    project = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=300,
                                    help_text="an existing project's slug or name; wins over `repository`")
    repository = serializers.JSONField(
        required=False, allow_null=True, default=None,
        help_text="what identifies the session's project: {git_root, remote, root_commit} (docs/projects.md)")
    recall = serializers.BooleanField(
        required=False, default=False,
        help_text="also answer `additional_context`: what automatic recall adds to this event (docs/autorecall.md)")
    agent = serializers.ChoiceField(choices=agent_dialects.AGENTS, required=False, default=agent_dialects.CLAUDE,
                                    help_text="the coding agent whose hook sent the event (metadata.source)")


def _result_dict(result: capture.CaptureResult) -> dict[str, Any]:
    return {
        "stored": result.stored,
        "conversation_id": result.conversation_id,
        "message_id": result.message_id,
        "turn_number": result.turn_number,
        "reason": result.reason,
        "checkpoint_job_id": result.checkpoint_job_id,
    }


class CaptureEventApi(APIView):
    @extend_schema(request=HookEventSerializer, responses={200: dict, 201: dict}, operation_id="capture_event")
    def post(self, request: Request) -> Response:
        data = HookEventSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        recall = values.pop("recall")
        result = capture.capture_hook_event(**values, actor=actor_name_from_rest(request))
        answer = _result_dict(result)
        if recall:
            answer["additional_context"] = capture.hook_recall(payload=values["payload"], result=result)
        return Response(answer, status=201 if result.stored else 200)


class CaptureEventBatchApi(APIView):
    """Events the hook spooled while Winni was away, in order, in one request. Each is stored in
    its own transaction; a refused event is reported in its result and does not stop the rest."""

    @extend_schema_serializer(component_name="CaptureEventBatch")
    class InputSerializer(StrictSerializer):
        events = serializers.ListField(child=serializers.JSONField(), max_length=1000)

    @extend_schema(request=InputSerializer, responses={200: dict}, operation_id="capture_event_batch")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        results: list[dict[str, Any]] = []
        for index, item in enumerate(data.validated_data["events"]):
            event = HookEventSerializer(data=item)
            if not event.is_valid():
                results.append({"stored": False, "error": f"events[{index}]: {event.errors}"})
                continue
            values = dict(event.validated_data)
            values.pop("recall")  # a spooled prompt was answered long ago: nothing to add now
            try:
                results.append(_result_dict(capture.capture_hook_event(**values, actor=actor_name_from_rest(request))))
            except ApplicationError as exc:
                results.append({"stored": False, "error": f"events[{index}]: {exc.message}"})
        return Response({"results": results})


class CaptureSessionStartApi(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("source", str, required=False, enum=list(capture.SESSION_START_SOURCES)),
            OpenApiParameter("cwd", str, required=False),
            OpenApiParameter("session_id", str, required=False,
                             description="with source compact or clear: what automatic recall gave it may be given again"),
            OpenApiParameter("project", str, required=False, description="an existing project's slug or name"),
            *[OpenApiParameter(name, str, required=False, description="the session's repository (docs/projects.md)")
              for name in REPOSITORY_PARAMETERS],
        ],
        responses={200: dict},
        operation_id="capture_session_start",
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        repository = {name: params[name] for name in REPOSITORY_PARAMETERS if params.get(name)}
        text = capture.session_start_text(
            source=params.get("source") or "startup", cwd=params.get("cwd"), project=params.get("project"),
            repository=repository or None, session_id=params.get("session_id") or None,
        )
        return Response({"text": text})


class CaptureHookApi(APIView):
    """Claude Code's hooks of type `http` post their input JSON here (install_claude_hooks
    --hook-type http); the answer is the hook's JSON output (docs/capture.md)."""

    @extend_schema(request=dict, responses={200: dict}, operation_id="capture_hook")
    def post(self, request: Request) -> Response:
        return Response(capture.http_hook(payload=request.data, actor=actor_name_from_rest(request)))
