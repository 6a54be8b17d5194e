"""A digest of every session, offline (issue #44.4): when a session ends or compacts, what it did in
a few lines, searchable as the kind "digest" (automatic recall and winni_recall rank it beside
past turns; the admin shows it above the transcript).

The digest is written from the stored messages with no model: what was asked (the user's
prompts), files touched (the tool calls that edit, write or read a file, named relative to the
project: core.paths.project_path), commands run and their outcome (the shell calls as one line:
conversations.toolcalls), decisions and rules stated (core.decisions, the reading the offline
medallion writer uses), questions nobody answered, and the last answer; dated by its first and
last message, in the conversation's project. A session with no text (only tool calls, only
images) gets no digest, and the log says why.

With an LLM configured (core.llm) the offline digest is written
first, as always, and queued for the model (issue #44.5), which rewrites the parts that need
reading (asked, decisions, rules, open questions, the last answer) from the same evidence: the
offline sections and the session's newest transcript text. The offline digest stays when the
backlog of digests waiting for the model is full, the day's token budget is spent, the provider
fails or its reply is not a digest; the row's `writer_note` says which."""
from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, ValidationError

from conversations.models import Conversation, Message, SessionDigest
from conversations.services.messages import conversation_roots
from conversations.tasks import session_digest_model_write_task, session_digest_write_task
from conversations.toolcalls import EDIT, READ, SHELL, WRITE, tool_call, tool_line
from core import llm, paths, repeats, searchable
from core.decisions import decision_statement, sentences, stated_decisions, stated_rules
from core.logs import storage_op

# How much of each part the digest keeps: it is read by a model inside a short block, so each
# line is short and each list the first few (the session's own transcript keeps everything).
ASKED_MAX = 6
FILES_MAX = 12
COMMANDS_MAX = 8
DECISIONS_MAX = 8
QUESTIONS_MAX = 5
LINE_CHARS = 160
LAST_ANSWER_CHARS = 400
# Messages read per session (the newest, when longer): a digest of a huge session stays bounded.
MESSAGES_MAX = 5_000
SCAN_CHARS = 20_000  # of one message's text
NO_TEXT = "the session holds no prompt or reply with text (only tool calls or attachments)"
EDITING = EDIT | WRITE | {"MultiEdit", "NotebookEdit"}
# A prompt made of generic words only ("run the tests", "continue") says nothing of what was asked.
_TRIVIAL = re.compile(r"^\W*(?:ok(?:ay)?|yes|no|thanks?(?: you)?|continue|go on|go ahead|run the tests?|lgtm|"
                      r"do it|proceed|commit(?: it)?|push(?: it)?)\W*$", re.I)


class Sections(TypedDict):
    asked: list[str]
    files_changed: list[str]
    files_read: list[str]
    commands: list[str]
    decisions: list[str]
    rules: list[str]
    open_questions: list[str]
    last_answer: str


def _clip(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def digest_sections(messages: list[Message], *, roots: list[str], cwd: str | None) -> Sections | None:
    """The digest's parts from a session's messages in order; None when none of them is a prompt
    or reply with text."""
    spoken = [m for m in messages if m.role in ("user", "assistant") and m.content.strip()]
    if not spoken:
        return None
    changed: list[str] = []
    read: list[str] = []
    commands: list[str] = []
    for message in messages:
        if message.role != "tool":
            continue
        call = tool_call(message.content)
        if call is None:
            continue
        name, args, _ = call
        if name in SHELL:
            commands.append(tool_line(message.content, cwd=cwd) or name)
            continue
        path = args.get("file_path") or args.get("notebook_path") or args.get("path") or args.get("absolute_path")
        named = paths.project_path(path, roots=roots, cwd=cwd) if isinstance(path, str) else ""
        if named and name in EDITING:
            changed.append(named)
        elif named and name in READ:
            read.append(named)
    prompts = [m for m in spoken if m.role == "user"]
    asked = [_clip(m.content) for m in prompts if not _TRIVIAL.match(m.content.strip())]
    said = [s for m in spoken for s in sentences(m.content, SCAN_CHARS)]
    replies = [m for m in spoken if m.role == "assistant"]
    return {
        "asked": repeats.unique(asked, ASKED_MAX),
        "files_changed": repeats.unique(changed, FILES_MAX),
        "files_read": repeats.unique([p for p in read if p not in changed], FILES_MAX),
        "commands": repeats.unique(commands, COMMANDS_MAX),
        "decisions": repeats.unique([_clip(decision_statement(s)) for s in stated_decisions(said)], DECISIONS_MAX,
                                  restated=True),
        "rules": repeats.unique([_clip(s) for s in stated_rules(said)], DECISIONS_MAX),
        "open_questions": repeats.unique(_unanswered(spoken), QUESTIONS_MAX),
        "last_answer": _clip(replies[-1].content, LAST_ANSWER_CHARS) if replies else "",
    }


def _unanswered(spoken: list[Message]) -> list[str]:
    """Questions nobody answered: those of the last turns after which the other side never spoke
    (a question the user asked at the end, a question the agent put to the user)."""
    tail: list[Message] = []
    for message in reversed(spoken):
        if tail and message.role != tail[0].role:
            break
        tail.insert(0, message)
    return [_clip(s) for m in tail for s in sentences(m.content, SCAN_CHARS) if s.endswith("?")]


SectionKey = Literal["asked", "files_changed", "files_read", "commands", "decisions", "rules", "open_questions"]
SECTION_TITLES: tuple[tuple[SectionKey, str], ...] = (("asked", "Asked"), ("files_changed", "Files changed"), ("files_read", "Files read"),
                  ("commands", "Commands"), ("decisions", "Decisions"), ("rules", "Rules"),
                  ("open_questions", "Open questions"))


def digest_lines(sections: Mapping[str, Any], *, given: list[set[str]] | None = None) -> list[str]:
    """The digest's parts, one line each ("Asked: …", "Commands: …", …, "Last answer: …"), without
    its heading. The last answer is left out when it only says again the decisions, rules or open
    questions listed above it (a reply "Decision: X" under "Decisions: X"). `given`: the words (core.repeats.words)
    of what the reader already has, as automatic recall's block gives it: a part saying what one
    of those says is left out too, and nothing is left when only what the session asked remains
    (the question, without the answer the reader has, adds nothing)."""
    parts: list[tuple[str, str, str]] = [(key, title, "; ".join(sections[key]))
                                         for key, title in SECTION_TITLES if sections.get(key)]
    answer = sections.get("last_answer") or ""
    stated = repeats.words(" ".join(item for key in ("decisions", "rules", "open_questions")
                                    for item in sections.get(key, [])))
    if answer and not repeats.repeats(repeats.words(answer), [stated]):
        parts.append(("last_answer", "Last answer", answer))
    if given:
        parts = [part for part in parts if not repeats.repeats(repeats.words(part[2]), given)]
        if all(key == "asked" for key, _, _ in parts):
            return []
    return [f"{title}: {said}" for _, title, said in parts]


def digest_text(sections: Sections, *, conversation: Conversation, started: Any, ended: Any) -> str:
    """The digest as it is searched and shown: a dated heading, then one line per part."""
    day = started.date().isoformat() if started else "undated"
    span = f"{started:%H:%M}–{ended:%H:%M} UTC" if started and ended else ""
    where = conversation.project.slug if conversation.project_id and conversation.project else "no project"
    heading = f"Session digest · {where} · {day} {span} · session {conversation.session_id or conversation.pk}".strip()
    return "\n".join([heading, *digest_lines(sections)])


def _session_messages(conversation: Conversation) -> tuple[list[Message], list[str], str | None]:
    """The evidence both writers read: the session's messages in order (the newest MESSAGES_MAX),
    its project's roots and its working directory."""
    newest = (Message.objects.filter(conversation=conversation).defer("search_vector")
              .order_by("-turn_number")[:MESSAGES_MAX])
    metadata = conversation.metadata if isinstance(conversation.metadata, dict) else {}
    cwd = metadata.get("cwd") if isinstance(metadata.get("cwd"), str) else None
    return sorted(newest, key=lambda m: m.turn_number), conversation_roots(conversation), cwd


def session_digest_write(*, conversation_id: Any, trigger: str = "") -> SessionDigest | None:
    """Write (or rewrite) the digest of a conversation from its messages; None, with the reason
    logged, when the conversation is gone or holds no text. With model digests on, the offline
    digest is queued for the model unless the backlog is full (then its note says so)."""
    with storage_op("conversation.digest", conversation_id=str(conversation_id), trigger=trigger) as log:
        conversation = Conversation.objects.select_related("project").filter(pk=conversation_id).first()
        if conversation is None:
            log.update(written=False, reason="no such conversation")
            return None
        messages, roots, cwd = _session_messages(conversation)
        sections = digest_sections(messages, roots=roots, cwd=cwd)
        if sections is None:
            log.update(written=False, reason=NO_TEXT, messages=len(messages))
            return None
        started, ended = messages[0].created_at, messages[-1].created_at
        values = {"project": conversation.project, "session_id": conversation.session_id, "sections": sections,
                  "text": digest_text(sections, conversation=conversation, started=started, ended=ended),
                  "trigger": trigger[:32], "messages_seen": len(messages), "started_at": started,
                  "ended_at": ended, "updated_at": timezone.now(), "writer": "extractive"}
        with transaction.atomic():
            awaiting, note = _model_queue_place(conversation)
            values.update(writer_note=note, awaiting_model=awaiting)
            digest, _ = SessionDigest.objects.update_or_create(conversation=conversation, defaults=values)
            searchable.announce_changed("digest", [digest.pk])
            if awaiting:
                transaction.on_commit(lambda: session_digest_model_write_task.delay(str(digest.pk)))
        log.update(written=True, digest_id=str(digest.pk), messages=len(messages), awaiting_model=awaiting,
                   note=note)
    return digest


# --- written by the model (issue #44.5) ---------------------------------------------------------

# The model reads the offline sections and the newest transcript text, at most this much (about
# 6,000 tokens), and answers in at most MODEL_OUTPUT_TOKENS: one digest costs under 10,000 tokens.
TRANSCRIPT_CHARS = 24_000
MODEL_OUTPUT_TOKENS = 1_500
# A digest that waited longer than this lost its task (a worker died): it leaves the backlog.
AWAITING_EXPIRES = dt.timedelta(hours=6)
BACKLOG_LOCK = "winni:digest-model-backlog"
BACKLOG_FULL = "backlog full: {waiting} digests already wait for the model (WINNI_DIGEST_LLM_BACKLOG={cap})"
MODEL_FAILED = "the model failed: {error}"
MODEL_INVALID = "the model's digest was not valid: {error}"
MODEL_SYSTEM = f"""You write the digest of one coding-agent session for a memory server; a later session \
reads it to know what this one did. Reply with one JSON object and nothing else, with exactly these keys:
"asked": what the user asked for, one line each, at most {ASKED_MAX};
"decisions": the decisions taken, each stated as the decision itself (no "Decision:" or "We decided"), at most {DECISIONS_MAX};
"rules": rules or conventions stated for the project, at most {DECISIONS_MAX};
"open_questions": questions still unanswered at the end, at most {QUESTIONS_MAX};
"last_answer": the gist of the agent's last answer, at most {LAST_ANSWER_CHARS} characters.
Every list item is a string under {LINE_CHARS} characters; a list is empty when the session says nothing of it. \
Use only what the evidence says. The evidence is an offline extraction (it may take a passing remark for a \
decision: correct it) and the session's newest transcript text."""


class ModelParts(BaseModel):
    """The parts of a digest the model writes; files and commands stay the offline writer's, read
    exactly from the tool calls (a model can only lose or invent them)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    asked: list[str]
    decisions: list[str]
    rules: list[str]
    open_questions: list[str]
    last_answer: str


def model_digests_enabled() -> bool:
    """An LLM is configured and digests may wait for it (WINNI_DIGEST_LLM_BACKLOG 0: they stay offline)."""
    return settings.WINNI_DIGEST_LLM_BACKLOG > 0 and settings.WINNI_MEDALLION_LLM_PROVIDER in llm.CHAT_CLIENTS


def model_backlog(*, excluding: Conversation | None = None) -> int:
    """Digests waiting for the model (queued within AWAITING_EXPIRES)."""
    waiting = SessionDigest.objects.filter(awaiting_model=True, updated_at__gte=timezone.now() - AWAITING_EXPIRES)
    return (waiting.exclude(conversation=excluding) if excluding else waiting).count()


def _model_queue_place(conversation: Conversation) -> tuple[bool, str]:
    """(waits for the model, why not): with model digests on, a place in the backlog unless it is
    full. Called inside the digest's write transaction; one lock orders the writers, so sessions
    ending together cannot pass the cap."""
    if not model_digests_enabled():
        return False, ""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [BACKLOG_LOCK])
    waiting = model_backlog(excluding=conversation)
    if waiting >= settings.WINNI_DIGEST_LLM_BACKLOG:
        return False, BACKLOG_FULL.format(waiting=waiting, cap=settings.WINNI_DIGEST_LLM_BACKLOG)
    return True, ""


def model_prompt(sections: Sections, messages: list[Message], *, cwd: str | None) -> str:
    """The offline sections, then the newest transcript text (tool calls as one line each) up to
    TRANSCRIPT_CHARS, oldest of it first."""
    lines: list[str] = []
    left = TRANSCRIPT_CHARS
    for message in reversed(messages):
        if message.role == "tool":
            line = tool_line(message.content, cwd=cwd) or ""
        else:
            line = message.content[:SCAN_CHARS].strip()
        if not line:
            continue
        line = f"[{message.role}] {line}"[-left:]
        lines.insert(0, line)
        left -= len(line) + 1
        if left <= 0:
            break
    extraction = json.dumps(sections, ensure_ascii=False, indent=1)
    return f"Offline extraction:\n{extraction}\n\nTranscript (newest part):\n" + "\n".join(lines)


def model_parts(reply: str) -> dict[str, Any]:
    """The model's reply as the digest's parts, each list cut to its length and each line clipped;
    ValueError when it is not one JSON object of exactly ModelParts' shape."""
    text = reply.strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ValueError(f"the reply holds no JSON object: {text[:200]!r}")
    try:
        parts = ModelParts.model_validate(json.loads(text[start:end + 1]))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not valid JSON: {exc}") from None
    except ValidationError as exc:
        raise ValueError("; ".join(f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}"
                                   for e in exc.errors()[:5])) from None
    limits = {"asked": ASKED_MAX, "decisions": DECISIONS_MAX, "rules": DECISIONS_MAX, "open_questions": QUESTIONS_MAX}
    written: dict[str, Any] = {key: repeats.unique([_clip(item) for item in getattr(parts, key) if item.strip()], most)
                               for key, most in limits.items()}
    written["last_answer"] = _clip(parts.last_answer, LAST_ANSWER_CHARS)
    return written


def session_digest_model_write(*, digest_id: Any) -> SessionDigest | None:
    """Rewrite a digest waiting for the model with the model's parts; on any failure the offline
    digest stays and `writer_note` says why (the budget's message, the provider's error, what was
    wrong with the reply). None when the digest no longer waits (rewritten or written meanwhile).
    Slow (one model call): runs in the worker, outside transactions."""
    with storage_op("conversation.digest_model", digest_id=str(digest_id)) as log:
        digest = (SessionDigest.objects.select_related("conversation__project")
                  .filter(pk=digest_id, awaiting_model=True).first())
        if digest is None:
            log.update(written=False, reason="not waiting for the model")
            return None
        read_at, conversation = digest.updated_at, digest.conversation
        messages, roots, cwd = _session_messages(conversation)
        sections = digest_sections(messages, roots=roots, cwd=cwd)
        client = llm.chat_client_from_settings(purpose="digest", max_output_tokens=MODEL_OUTPUT_TOKENS)
        note, changes = "", {}
        if sections is None or client is None:
            note = NO_TEXT if sections is None else "no LLM is configured any more (WINNI_MEDALLION_LLM_PROVIDER)"
        else:
            json_format = None if settings.WINNI_MEDALLION_LLM_JSON_MODE == "off" else {"type": "json_object"}
            try:
                reply = client.chat([{"role": "user", "content": model_prompt(sections, messages, cwd=cwd)}],
                                    system=MODEL_SYSTEM, json_format=json_format)
                sections = {**sections, **model_parts(reply)}  # type: ignore[assignment]  # model_parts: only Sections keys (ModelParts validated the reply)
            except llm.LLMBudgetSpent as exc:
                note = str(exc)
            except llm.LLMError as exc:
                note = MODEL_FAILED.format(error=exc)
            except ValueError as exc:
                note = MODEL_INVALID.format(error=exc)
            else:
                started, ended = messages[0].created_at, messages[-1].created_at
                changes = {"sections": sections, "writer": f"{client.provider}:{client.model}"[:240],
                           "text": digest_text(sections, conversation=conversation, started=started, ended=ended),
                           "messages_seen": len(messages), "started_at": started, "ended_at": ended}
        with transaction.atomic():
            # A checkpoint that rewrote the digest meanwhile queued it again: that run writes it.
            current = (SessionDigest.objects.select_for_update()
                       .filter(pk=digest.pk, awaiting_model=True, updated_at=read_at).first())
            if current is None:
                log.update(written=False, reason="rewritten meanwhile")
                return None
            fields = {**changes, "writer_note": note[:2000], "awaiting_model": False, "updated_at": timezone.now()}
            for field, value in fields.items():
                setattr(current, field, value)
            current.save(update_fields=list(fields))
            if changes:
                searchable.announce_changed("digest", [current.pk])
        log.update(written=bool(changes), writer=current.writer, note=note[:300])
    return current


def session_digest_queue(*, conversation_id: Any, trigger: str) -> None:
    """Write the conversation's digest in the worker, once the current transaction commits."""
    transaction.on_commit(lambda: session_digest_write_task.delay(str(conversation_id), trigger))
