"""A conversation keeps its title (first user prompt) and first/last message times, from its
messages, through both write paths; the migration fills them in for existing conversations."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.db import connection

from conversations import services
from conversations.models import Conversation, prompt_title

pytestmark = pytest.mark.django_db


def test_message_store_keeps_title_and_activity():
    conversation = services.conversation_begin(session_id="s1")
    services.message_store(conversation_id=conversation.id, role="assistant", content="Hello.",
                           created_at="2026-03-01T12:00:00Z")
    fresh = Conversation.objects.get(pk=conversation.pk)
    assert fresh.title is None  # no user prompt yet
    services.message_store(conversation_id=conversation.id, role="user", content=" First\n\n question? ",
                           created_at="2026-03-01T11:00:00Z")
    services.message_store(conversation_id=conversation.id, role="user", content="Second question.",
                           created_at="2026-03-02T09:00:00Z")
    fresh = Conversation.objects.get(pk=conversation.pk)
    assert fresh.title == "First question?"
    assert fresh.first_message_at == dt.datetime(2026, 3, 1, 11, tzinfo=dt.timezone.utc)
    assert fresh.last_message_at == dt.datetime(2026, 3, 2, 9, tzinfo=dt.timezone.utc)


def test_bulk_keeps_title_and_activity_and_later_writes_extend_it():
    conversation, _ = services.messages_store_bulk(session_id="s2", messages=[
        {"role": "system", "content": "Be brief.", "created_at": "2026-02-01T08:00:00Z"},
        {"role": "user", "content": "x" * 500, "created_at": "2026-02-01T08:00:01Z"},
        {"role": "assistant", "content": "Done.", "created_at": "2026-02-01T08:05:00Z"},
    ])
    fresh = Conversation.objects.get(pk=conversation.pk)
    assert fresh.title == "x" * 200
    assert fresh.first_message_at.isoformat() == "2026-02-01T08:00:00+00:00"
    assert fresh.last_message_at.isoformat() == "2026-02-01T08:05:00+00:00"
    services.messages_store_bulk(conversation_id=conversation.id, messages=[
        {"role": "user", "content": "Later.", "created_at": "2026-02-03T10:00:00Z"}])
    fresh = Conversation.objects.get(pk=conversation.pk)
    assert fresh.title == "x" * 200
    assert fresh.last_message_at.isoformat() == "2026-02-03T10:00:00+00:00"


def test_the_migration_backfills_existing_conversations(transactional_db: Any):
    from importlib import import_module

    backfill = import_module("conversations.migrations.0005_conversation_title_and_activity").BACKFILL
    conversation, _ = services.messages_store_bulk(session_id="s3", messages=[
        {"role": "assistant", "content": "Hi.", "created_at": "2026-01-01T00:00:00Z"},
        {"role": "user", "content": "Where\tare the\n backups?", "created_at": "2026-01-02T00:00:00Z"},
    ])
    Conversation.objects.filter(pk=conversation.pk).update(title=None, first_message_at=None, last_message_at=None)
    with connection.cursor() as cursor:
        cursor.execute(backfill)
    fresh = Conversation.objects.get(pk=conversation.pk)
    assert fresh.title == prompt_title("Where\tare the\n backups?") == "Where are the backups?"
    assert fresh.first_message_at.isoformat() == "2026-01-01T00:00:00+00:00"
    assert fresh.last_message_at.isoformat() == "2026-01-02T00:00:00+00:00"
