"""A digest of every session, offline (issue #44.4): when a session ends or compacts, what it did in
a few lines, searchable as the kind "digest" (automatic recall and winni_recall rank it beside
past turns; the admin shows it above the transcript).

The digest is written from the stored messages with no model: what was asked (the user's
prompts), files touched (the tool calls that edit, write or read a file, named relative to the
project: core.paths.project_path), commands run and their outcome (the shell calls as one line:
conversations.toolcalls), decisions and rules stated (core.decisions, the reading the offline
medallion writer uses), questions nobody answered, and the last answer; dated by its first and
last message, in the conversation's project. A session with no text (only tool calls, only
images) gets no digest, and the log says why."""
from __future__ import annotations

import re
from typing import Any, TypedDict

from django.db import transaction
from django.utils import timezone

from conversations.models import Conversation, Message, SessionDigest
from conversations.services.messages import conversation_roots
from conversations.tasks import session_digest_write_task
from conversations.toolcalls import EDIT, READ, SHELL, WRITE, tool_call, tool_line
from core import paths, repeats, searchable
from core.decisions import decision_statement, stated_decisions, stated_rules
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
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
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


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text[:SCAN_CHARS]) if s and s.strip()]


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
    sentences = [s for m in spoken for s in _sentences(m.content)]
    replies = [m for m in spoken if m.role == "assistant"]
    return {
        "asked": repeats.unique(asked, ASKED_MAX),
        "files_changed": repeats.unique(changed, FILES_MAX),
        "files_read": repeats.unique([p for p in read if p not in changed], FILES_MAX),
        "commands": repeats.unique(commands, COMMANDS_MAX),
        "decisions": repeats.unique([_clip(decision_statement(s)) for s in stated_decisions(sentences)], DECISIONS_MAX,
                                  restated=True),
        "rules": repeats.unique([_clip(s) for s in stated_rules(sentences)], DECISIONS_MAX),
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
    return [_clip(s) for m in tail for s in _sentences(m.content) if s.endswith("?")]


SECTION_TITLES = (("asked", "Asked"), ("files_changed", "Files changed"), ("files_read", "Files read"),
                  ("commands", "Commands"), ("decisions", "Decisions"), ("rules", "Rules"),
                  ("open_questions", "Open questions"))


def digest_text(sections: Sections, *, conversation: Conversation, started: Any, ended: Any) -> str:
    """The digest as it is searched and shown: a dated heading, then one line per part."""
    day = started.date().isoformat() if started else "undated"
    span = f"{started:%H:%M}–{ended:%H:%M} UTC" if started and ended else ""
    where = conversation.project.slug if conversation.project_id and conversation.project else "no project"
    lines = [f"Session digest · {where} · {day} {span} · session {conversation.session_id or conversation.pk}".strip()]
    for key, title in SECTION_TITLES:
        items = sections[key]  # type: ignore[literal-required]
        if items:
            lines.append(f"{title}: " + "; ".join(items))
    if sections["last_answer"]:
        lines.append(f"Last answer: {sections['last_answer']}")
    return "\n".join(lines)


def session_digest_write(*, conversation_id: Any, trigger: str = "") -> SessionDigest | None:
    """Write (or rewrite) the digest of a conversation from its messages; None, with the reason
    logged, when the conversation is gone or holds no text."""
    with storage_op("conversation.digest", conversation_id=str(conversation_id), trigger=trigger) as log:
        conversation = Conversation.objects.select_related("project").filter(pk=conversation_id).first()
        if conversation is None:
            log.update(written=False, reason="no such conversation")
            return None
        newest = (Message.objects.filter(conversation=conversation).defer("search_vector")
                  .order_by("-turn_number")[:MESSAGES_MAX])
        messages = sorted(newest, key=lambda m: m.turn_number)
        metadata = conversation.metadata if isinstance(conversation.metadata, dict) else {}
        cwd = metadata.get("cwd") if isinstance(metadata.get("cwd"), str) else None
        sections = digest_sections(messages, roots=conversation_roots(conversation), cwd=cwd)
        if sections is None:
            log.update(written=False, reason=NO_TEXT, messages=len(messages))
            return None
        started, ended = messages[0].created_at, messages[-1].created_at
        values = {"project": conversation.project, "session_id": conversation.session_id, "sections": sections,
                  "text": digest_text(sections, conversation=conversation, started=started, ended=ended),
                  "trigger": trigger[:32], "messages_seen": len(messages), "started_at": started,
                  "ended_at": ended, "updated_at": timezone.now(), "writer": "extractive"}
        with transaction.atomic():
            digest, _ = SessionDigest.objects.update_or_create(conversation=conversation, defaults=values)
            searchable.announce_changed("digest", [digest.pk])
        log.update(written=True, digest_id=str(digest.pk), messages=len(messages))
    return digest


def session_digest_queue(*, conversation_id: Any, trigger: str) -> None:
    """Write the conversation's digest in the worker, once the current transaction commits."""
    transaction.on_commit(lambda: session_digest_write_task.delay(str(conversation_id), trigger))
