"""Retention purges, VACUUM, the beat schedule, and settings validated at start."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys

import pytest
from celery import Celery
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from conversations import services as conv
from conversations.models import Conversation, Message
from core.searchable import searchable_changed
from tests.support import ROOT
from winni_site import maintenance, pgtools
from winni_site.celery import setup_periodic_tasks


def _aged(days: int, session: str) -> Conversation:
    conversation = conv.conversation_begin(session_id=session)
    conv.message_store(conversation_id=conversation.id, role="user", content="old words")
    stamp = timezone.now() - dt.timedelta(days=days)
    Conversation.objects.filter(pk=conversation.pk).update(created_at=stamp, updated_at=stamp)
    return conversation


@pytest.mark.django_db
def test_retention_is_off_by_default_and_purges_only_what_is_older(settings, capsys, django_capture_on_commit_callbacks):
    old, recent = _aged(40, "old"), _aged(5, "recent")
    assert maintenance.retention_purge()["conversations"] == {"days": 0, "cutoff": None, "rows": 0, "dry_run": False}
    assert Conversation.objects.count() == 2

    settings.WINNI_RETENTION_DAYS_CONVERSATIONS = 30
    call_command("winni_retention", dry_run=True)
    assert "conversations: would delete 1 older than 30 days" in capsys.readouterr().out
    assert Conversation.objects.count() == 2

    announced = []
    receiver = lambda sender, kind, ids, **kw: announced.append((kind, ids))  # noqa: E731
    searchable_changed.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            report = maintenance.retention_purge()
    finally:
        searchable_changed.disconnect(receiver)
    assert report["conversations"]["rows"] == 1
    assert list(Conversation.objects.values_list("session_id", flat=True)) == ["recent"]
    assert Message.objects.filter(conversation_id=old.pk).count() == 0
    assert Message.objects.filter(conversation_id=recent.pk).count() == 1
    assert len(announced) == 1 and announced[0][0] == "message" and len(announced[0][1]) == 1


@pytest.mark.django_db(transaction=True)
def test_vacuum_reports_sizes_before_and_after(capsys):
    _aged(1, "v")
    call_command("winni_vacuum")
    out = capsys.readouterr().out
    assert "conversations_message" in out and out.splitlines()[-1].startswith("total")
    with transaction.atomic(), pytest.raises(pgtools.OperationFailed, match="inside a transaction"):
        maintenance.vacuum_run()


def test_beat_schedules_backups_unless_the_interval_is_zero(settings):
    app = Celery("schedule-test", set_as_current=False)  # tasks keep going to the project's app
    setup_periodic_tasks(app)
    names = {entry["task"]: entry["schedule"] for entry in app.conf.beat_schedule.values()}
    assert names["winni_site.tasks.backup_scheduled"] == 24 * 3600.0
    assert "winni_site.tasks.retention_purge" in names
    assert names["agents.tasks.injections_judge_pending"] == 300.0  # the use prior learns without the admin

    settings.WINNI_BACKUP_INTERVAL_HOURS = 0
    app = Celery("schedule-test-off", set_as_current=False)
    setup_periodic_tasks(app)
    assert "winni_site.tasks.backup_scheduled" not in {e["task"] for e in app.conf.beat_schedule.values()}


@pytest.mark.parametrize("name, value, message", [
    ("WINNI_BACKUP_KEEP", "0", "WINNI_BACKUP_KEEP must be at least 1"),
    ("WINNI_BACKUP_INTERVAL_HOURS", "daily", "WINNI_BACKUP_INTERVAL_HOURS must be a number"),
    ("WINNI_RETENTION_DAYS_CONVERSATIONS", "-3", "WINNI_RETENTION_DAYS_CONVERSATIONS must be at least 0"),
    ("WINNI_BACKUP_BEFORE_MIGRATE", "perhaps", "WINNI_BACKUP_BEFORE_MIGRATE must be true or false"),
    ("WINNI_PG_BIN_DIR", "/nowhere", "WINNI_PG_BIN_DIR must be a folder containing pg_dump"),
])
def test_a_bad_setting_stops_the_start_naming_the_variable(name, value, message):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "winni_site.settings.base", "DATABASE_URL": "postgresql://x@/x",
           "REDIS_URL": "redis://127.0.0.1:1/0", name: value}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.django_db
def test_fiedler_results_have_their_own_retention(settings):
    from conversations.models import FiedlerResult

    old = conv.fiedler_result_store(correlation_id="old", model="m", output="x")
    conv.fiedler_result_store(correlation_id="new", model="m", output="y")
    FiedlerResult.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=10))
    _aged(40, "conversation kept: its own retention is off")
    settings.WINNI_RETENTION_DAYS_FIEDLER = 7
    assert maintenance.retention_purge(dry_run=True)["fiedler_results"]["rows"] == 1
    report = maintenance.retention_purge()
    assert report["fiedler_results"]["rows"] == 1 and report["conversations"]["rows"] == 0
    assert list(FiedlerResult.objects.values_list("correlation_id", flat=True)) == ["new"]
    assert Conversation.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_vacuum_expires_cache_answers_past_their_ttl(capsys):
    from memory.librarian import services as librarian
    from memory.librarian.models import QueryMemory

    entry, _ = librarian.librarian_remember(query="when do backups run?", answer="every 24 hours")
    QueryMemory.objects.filter(pk=entry.pk).update(expires_at=timezone.now() - dt.timedelta(minutes=1))
    call_command("winni_vacuum")
    assert "expired 1 cache entries past their TTL" in capsys.readouterr().out
    assert QueryMemory.objects.get(pk=entry.pk).answer is None


@pytest.mark.django_db
def test_cache_retention_spares_pinned_entries(settings):
    from memory.librarian import services as librarian
    from memory.librarian.models import QueryMemory

    old, _ = librarian.librarian_remember(query="an old question", answer="old")
    pinned, _ = librarian.librarian_remember(query="a pinned question", answer="kept", pin=True)
    librarian.librarian_remember(query="a recent question", answer="new")
    QueryMemory.objects.filter(pk__in=[old.pk, pinned.pk]).update(last_asked=timezone.now() - dt.timedelta(days=9))
    settings.WINNI_RETENTION_DAYS_CACHE = 3
    assert maintenance.retention_purge()["cache_entries"]["rows"] == 1
    assert sorted(QueryMemory.objects.values_list("query_text", flat=True)) == ["a pinned question", "a recent question"]


@pytest.mark.django_db
def test_llm_call_accounting_is_kept_90_days_by_default(settings):
    from core import llm
    from core.models import LLMCall

    for days in (100, 2):
        call = llm.call_begin(purpose="digest", provider="openai", model="m", input_tokens=10, output_tokens=5)
        LLMCall.objects.filter(pk=call.pk).update(started_at=timezone.now() - dt.timedelta(days=days))
    assert settings.WINNI_RETENTION_DAYS_LLM_CALLS == 90
    assert maintenance.retention_purge()["llm_calls"]["rows"] == 1
    assert LLMCall.objects.count() == 1
    settings.WINNI_RETENTION_DAYS_LLM_CALLS = 0
    assert maintenance.retention_purge()["llm_calls"]["rows"] == 0
