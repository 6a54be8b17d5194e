"""REST endpoints the hook program calls (agents/hook.py), and automatic recall's
(`POST /api/v1/recall/context`)."""
from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView
from typing_extensions import NotRequired, TypedDict

from agents import capture
from agents import dialects as agent_dialects
from agents.autorecall import ContextDict, context_for_prompt
from agents.inputs import CONTEXT
from core import access
from core.actors import actor_name_from_rest
from core.errors import ApplicationError
from core.rest import (
    NO_NUL,
    NON_BLANK,
    DateBoundField,
    ProjectField,
    StrictSerializer,
    answer,
)

REPOSITORY_PARAMETERS = ("git_root", "remote", "root_commit")


CAPTURE = ["capture"]
CID = "6b0d2457-c3c8-48d6-8bce-07d50d9c9c8c"
TEXT = {"type": "string", "pattern": NON_BLANK}
NULLABLE_TEXT = {"type": "string", "nullable": True, "pattern": NO_NUL}
# Stored as text (JSON), so anything goes, NUL included (kept as U+FFFD).
ANY_JSON = {"nullable": True, "description": "any JSON value"}


def _event(name: str, required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    """One hook event's payload: the fields Winni reads (any others are kept out of the way)."""
    return {"type": "object", "title": name, "required": ["hook_event_name", "session_id", *required],
            "additionalProperties": True,
            "properties": {"hook_event_name": {"type": "string", "enum": [name]}, "session_id": TEXT,
                           "cwd": NULLABLE_TEXT, "transcript_path": NULLABLE_TEXT, **properties}}


# What capture_hook_event reads of Claude Code's hook payloads (docs/capture.md).
PAYLOAD_SCHEMA = {
    "description": "the hook's stdin, unchanged",
    "oneOf": [
        # NUL in a prompt is kept as U+FFFD (capture never loses a prompt). A prompt of a newer shape
        # (a structure) is stored as the text it holds, else as its JSON (docs/capture.md).
        _event("UserPromptSubmit", ("prompt",), prompt={"anyOf": [
            {"type": "string", "pattern": "\\S", "x-allows-nul": True},
            {"type": "object", "description": "a newer shape: the text inside is stored, else the JSON"},
            {"type": "array", "items": {}}, {"type": "number"}, {"type": "boolean"}]}),
        _event("Stop", last_assistant_message={"nullable": True, "description": "the reply (blank: nothing stored)"}),
        _event("PostToolUse", ("tool_name",), tool_name=TEXT, tool_input=ANY_JSON, tool_response=ANY_JSON,
               tool_use_id={"nullable": True}),
        *[_event(name) for name in ("SessionStart", "PreCompact", "SessionEnd")],
    ],
}
REPOSITORY_SCHEMA = {
    "type": "object", "nullable": True, "additionalProperties": False,
    "description": "what identifies the session's project (docs/projects.md)",
    # A part capture cannot use (NUL, a relative path) is dropped rather than lose the event.
    "properties": {key: {"nullable": True, "description": "a string; anything else is dropped"}
                   for key in REPOSITORY_PARAMETERS},
}


SHA_PATTERN = "^[0-9a-fA-F]{4,64}$"
_COMMIT_FILE = {"path": {"type": "string", "minLength": 1, "maxLength": 4096, "pattern": NO_NUL,
                         "description": "relative to the git root"},
                "commit": {"type": "string", "pattern": SHA_PATTERN, "description": "the newest commit changing it"},
                "committed_at": {"type": "string", "format": "date-time"}}
COMMIT_FILES_SCHEMA = {
    "type": "array", "maxItems": 1000, "description": "the files changed since `since` (git diff --name-status -M)",
    "items": {"oneOf": [
        {"type": "object", "required": ["path", "status", "commit", "committed_at"], "additionalProperties": False,
         "properties": {**_COMMIT_FILE, "status": {"type": "string", "enum": ["A", "C", "M", "T", "D"]}}},
        {"type": "object", "required": ["path", "status", "renamed_to", "commit", "committed_at"],
         "additionalProperties": False,
         "properties": {**_COMMIT_FILE, "status": {"type": "string", "enum": ["R"]},
                        "renamed_to": {"type": "string", "minLength": 1, "maxLength": 4096, "pattern": NO_NUL}}},
    ]},
}


@extend_schema_field({"type": "string", "pattern": SHA_PATTERN})
class CommitField(serializers.RegexField):
    """A commit hash (4 to 64 hexadecimal digits)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(SHA_PATTERN, **kwargs)


@extend_schema_field(COMMIT_FILES_SCHEMA)
class CommitFilesField(serializers.JSONField):
    """The files a commit report carries: the service checks each and names it (files[3].commit)."""


@extend_schema_field(PAYLOAD_SCHEMA)
class PayloadField(serializers.JSONField):
    """The hook's stdin: the service checks it and names the field (payload.prompt)."""


@extend_schema_field(REPOSITORY_SCHEMA)
class RepositoryField(serializers.JSONField):
    """{git_root, remote, root_commit}: the service checks it."""


class HookEventSerializer(StrictSerializer):
    payload = PayloadField()
    event_id = serializers.CharField(required=False, allow_null=True, max_length=100,
                                     help_text="the hook's id for this event: a retry with the same id stores nothing")
    captured_at = DateBoundField(required=False, allow_null=True, help_text="when the hook saw it (ISO 8601)")
    git_branch = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=300)
    project = ProjectField(required=False, allow_null=True, allow_blank=True,
                           help_text="an existing project's slug or name; wins over `repository`")
    repository = RepositoryField(required=False, allow_null=True, default=None)
    recall = serializers.BooleanField(
        required=False, default=False,
        help_text="also answer `additional_context`: what automatic recall adds to this event (docs/autorecall.md)")
    agent = serializers.ChoiceField(choices=agent_dialects.AGENTS, required=False, default=agent_dialects.CLAUDE,
                                    help_text="the coding agent whose hook sent the event (metadata.source)")
    recall_undelivered = serializers.CharField(
        required=False, max_length=300,
        help_text="sent with an event again when the hook gave up waiting for Winni's answer to it: why the "
                  "recall block prepared for it never reached the agent (the admin shows it as not delivered)")


class ResultDict(TypedDict):
    stored: bool
    conversation_id: str | None
    message_id: str | None
    turn_number: int | None
    reason: str | None
    checkpoint_job_id: str | None
    additional_context: NotRequired[str]  # with recall: true


class BatchItemDict(TypedDict, total=False):
    stored: bool
    conversation_id: str | None
    message_id: str | None
    turn_number: int | None
    reason: str | None
    checkpoint_job_id: str | None
    error: str
    additional_context: str  # the last event's, when it asked for recall


class SessionStartDict(TypedDict):
    text: str
    # With `head`: the commit Winni last saw for the project when it is not `head` ("" when it saw
    # none yet): the hook then reports the files changed since (POST /capture/commits).
    commit_seen: NotRequired[str]


class CommitReportDict(TypedDict):
    project: str
    head: str
    since: str | None
    files: int


class BatchDict(TypedDict):
    results: list[BatchItemDict]


def _result_dict(result: capture.CaptureResult) -> dict[str, Any]:
    return {
        "stored": result.stored,
        "conversation_id": result.conversation_id,
        "message_id": result.message_id,
        "turn_number": result.turn_number,
        "reason": result.reason,
        "checkpoint_job_id": result.checkpoint_job_id,
    }


PROMPT_EVENT: dict[str, Any] = {"payload": {"hook_event_name": "UserPromptSubmit", "session_id": "7d1c9b0e-claude-session",
                            "cwd": "/home/me/src/winni", "prompt": "How do we store money amounts?"},
                "event_id": "evt-0001", "captured_at": "2026-11-24T09:50:00Z",
                "repository": {"git_root": "/home/me/src/winni", "remote": "github.com/example/winni",
                               "root_commit": None}}
STORED = {"stored": True, "conversation_id": CID, "message_id": "0f8e3a52-5a1c-4b7e-9d0e-2c4f3b1a7e11",
          "turn_number": 1, "reason": None, "checkpoint_job_id": None}


def _capture(values: dict[str, Any], *, actor: str, recall: bool) -> tuple[capture.CaptureResult, str | None]:
    """One hook event stored (and what automatic recall adds to it when `recall`); an event the hook
    sends again after giving up waiting marks its undelivered block."""
    undelivered = values.pop("recall_undelivered", None)
    if recall:
        result, context = capture.capture_with_recall(**values, actor=actor)
    else:
        result, context = capture.capture_hook_event(**values, actor=actor), None
    if undelivered:
        capture.recall_undelivered(payload=values["payload"], event_id=values.get("event_id"), reason=undelivered,
                                   agent=values.get("agent", agent_dialects.CLAUDE))
    return result, context


class CaptureEventApi(APIView):
    @extend_schema(
        operation_id="capture_event", tags=CAPTURE, summary="Capture one Claude Code hook event",
        description="What the hook program posts for each event: a prompt (UserPromptSubmit), a reply (Stop) or "
                    "a tool call (PostToolUse) is stored in the session's conversation (201); other events store "
                    "nothing (200, `reason` says why), PreCompact and SessionEnd start a medallion checkpoint. "
                    "A repeated `event_id` stores nothing ([docs/capture.md](docs/capture.md)).",
        request=HookEventSerializer,
        examples=[OpenApiExample("a user prompt", request_only=True, value=PROMPT_EVENT)],
        responses={201: answer(ResultDict, "stored", STORED),
                   200: answer(ResultDict, "nothing stored (`reason`), or a checkpoint started", {
                       "stored": False, "conversation_id": CID, "message_id": None, "turn_number": None,
                       "reason": "duplicate", "checkpoint_job_id": None})},
    )
    def post(self, request: Request) -> Response:
        data = HookEventSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        result, context = _capture(values, actor=actor_name_from_rest(request), recall=values.pop("recall"))
        answer = _result_dict(result)
        if context is not None:
            answer["additional_context"] = context
        return Response(answer, status=201 if result.stored else 200)


class CaptureEventBatchApi(APIView):
    """Events the hook spooled while Winni was away, in order, in one request. Each is stored in
    its own transaction; a refused event is reported in its result and does not stop the rest."""

    @extend_schema_serializer(component_name="CaptureEventBatch")
    class InputSerializer(StrictSerializer):
        events = serializers.ListField(child=serializers.DictField(), max_length=1000,
                                       help_text="up to 1,000 events, each shaped like POST /capture/events")

    @extend_schema(
        operation_id="capture_event_batch", tags=CAPTURE, summary="Capture spooled hook events",
        description="Events the hook spooled while Winni was away, in order. Each is stored in its own "
                    "transaction; a refused event is reported in its result (`error`) and does not stop the rest. "
                    "The last event may ask for `recall` (the hook's event of the moment, sent after its backlog): "
                    "its result carries `additional_context`.",
        request=InputSerializer,
        examples=[OpenApiExample("two spooled events", request_only=True, value={"events": [
            PROMPT_EVENT, {**PROMPT_EVENT, "event_id": "evt-0002",
                           "payload": {**PROMPT_EVENT["payload"], "hook_event_name": "Stop",
                                       "last_assistant_message": "As integer cents."}}]})],
        responses={200: answer(BatchDict, "one result per event, in order", {"results": [STORED]})},
    )
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
            # A spooled prompt's moment has passed: only the batch's last event, the one the hook
            # sends now, may ask what Winni knows about it.
            recall = values.pop("recall") and index == len(data.validated_data["events"]) - 1
            try:
                result, context = _capture(values, actor=actor_name_from_rest(request), recall=recall)
                results.append({**_result_dict(result), **({"additional_context": context} if context is not None else {})})
            except ApplicationError as exc:
                results.append({"stored": False, "error": f"events[{index}]: {exc.message}"})
        return Response({"results": results})


class CaptureSessionStartApi(APIView):
    class InputSerializer(StrictSerializer):
        source = serializers.ChoiceField(choices=list(capture.SESSION_START_SOURCES), required=False,  # type: ignore[assignment]  # a field named as the hook's payload names it; DRF takes declared fields off the class, so Field.source is not shadowed
                                         default="startup", help_text="Claude Code's SessionStart source")
        # The hook sends `cwd=` when Claude Code gave none.
        cwd = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False,
                                    help_text="the session's directory")
        project = ProjectField(required=False, help_text="an existing project's slug or name")
        session_id = serializers.CharField(required=False, trim_whitespace=False,
                                           help_text="with source compact or clear: what automatic recall gave "
                                                     "the session may be given again")
        git_root = serializers.CharField(required=False, trim_whitespace=False,
                                         help_text="the session's repository (docs/projects.md)")
        remote = serializers.CharField(required=False, trim_whitespace=False)
        root_commit = serializers.CharField(required=False, trim_whitespace=False)
        head = serializers.CharField(required=False, trim_whitespace=False,
                                     help_text="the repository's HEAD commit: the answer says which commit Winni "
                                               "last saw when it is another (commit_seen)")

    @extend_schema(
        operation_id="capture_session_start", tags=CAPTURE, summary="What a new session should load",
        description="The text the SessionStart hook prints into Claude Code's context: the active global "
                    "startup context, the project's, and the project's latest medallions (nothing of another "
                    "project).",
        parameters=[InputSerializer],
        responses={200: answer(SessionStartDict, "the text (empty when there is nothing to load)",
                               {"text": "# Startup context: invoice-export\nMoney is integer cents."})},
    )
    def get(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        repository = {name: params[name] for name in REPOSITORY_PARAMETERS if params.get(name)}
        text = capture.session_start_text(
            source=params["source"], cwd=params.get("cwd") or None, project=params.get("project"),
            repository=repository or None, session_id=params.get("session_id") or None,
        )
        seen = capture.commit_seen_for(cwd=params.get("cwd") or None, project=params.get("project"),
                                       repository=repository or None, head=params.get("head"))
        return Response({"text": text, **({"commit_seen": seen} if seen is not None else {})})


class CaptureCommitsApi(APIView):
    class InputSerializer(StrictSerializer):
        cwd = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False,
                                    help_text="the session's directory")
        project = ProjectField(required=False, help_text="an existing project's slug or name")
        repository = RepositoryField(required=False, allow_null=True)
        head = CommitField(help_text="the repository's HEAD commit")
        since = CommitField(required=False, allow_null=True,
                            help_text="the commit Winni last saw (session-start's commit_seen); null: the first "
                                      "report, which only records head")
        files = CommitFilesField(required=False, help_text=(
            "the files changed between since and head, at most 1,000, each with the newest commit that "
            "changed it (renamed_to with status R)"))

    @extend_schema(
        operation_id="capture_commits", tags=CAPTURE, summary="Files changed by commits since Winni last looked",
        description="The SessionStart hook reports the repository's HEAD and the files changed since the commit "
                    "Winni last saw for the project: the items anchored to them become possibly stale (\"src/x.py "
                    "changed since, in commit abc1234 on …\"), one mark per file, its latest change. Files a "
                    "session's captured edits changed since the last report are that session's change.",
        request=InputSerializer,
        responses={200: answer(CommitReportDict, "what was recorded",
                               {"project": "invoice-export", "head": "3f2a9c1e", "since": "1b7d0e44", "files": 2})},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        return Response(capture.commits_report(
            cwd=params.get("cwd") or None, project=params.get("project"), repository=params.get("repository"),
            head=params["head"], since=params.get("since") or None, files=params.get("files")))


class HookSpecificDict(TypedDict):
    hookEventName: str
    additionalContext: str


class HookOutputDict(TypedDict):
    hookSpecificOutput: NotRequired[HookSpecificDict]


class CaptureHookApi(APIView):
    """Claude Code's hooks of type `http` post their input JSON here (install_claude_hooks
    --hook-type http); the answer is the hook's JSON output (docs/capture.md)."""

    @extend_schema(
        operation_id="capture_hook", tags=CAPTURE, summary="Capture an http hook's event and answer it",
        description="Claude Code hooks of type `http` (`install_claude_hooks --hook-type http`) post their input "
                    "here as it is: the event is captured like `POST /capture/events`, and the answer is the "
                    "hook's JSON output: SessionStart's startup text and UserPromptSubmit's recalled block as "
                    "`hookSpecificOutput.additionalContext`, else `{}`.",
        request={"application/json": PAYLOAD_SCHEMA},
        examples=[OpenApiExample("a user prompt", request_only=True, value=PROMPT_EVENT["payload"])],
        responses={200: answer(HookOutputDict, "what Claude Code adds to its context (or nothing)", {
            "hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                   "additionalContext": "Winni recalls: money is integer cents."}})},
    )
    def post(self, request: Request) -> Response:
        return Response(capture.http_hook(payload=request.data, actor=actor_name_from_rest(request)))


class RecallContextApi(APIView):
    token_scopes = {"POST": access.READ}  # reads what is stored (and notes what it gave)

    InputSerializer = CONTEXT.serializer()

    @extend_schema(
        operation_id="recall_context", tags=["recall"], summary="What to add to a prompt",
        description="Automatic recall (`winni_context`, docs/autorecall.md): what Winni knows that is relevant "
                    "to the prompt, within `max_chars`, gated (empty when nothing is relevant) and never "
                    "repeated within a session; `gate` says why. Time words in the prompt (\"what did we decide "
                    "last week\") are read relative to `as_of` and rank items of that time higher, as in "
                    "`/api/v1/recall`; `time_filter` says what was done.",
        request=InputSerializer,
        examples=[OpenApiExample("a prompt", request_only=True,
                                 value={"prompt": "How do we store money amounts?", "session_id": "demo"})],
        responses={200: answer(ContextDict, "the text to add (empty: nothing)", {
            "text": "", "items": [], "gate": {"injected": False, "reason": "nothing relevant"},
            "time_filter": None})},
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(context_for_prompt(**data.validated_data))
