"""The answer cache through REST, the admin, and the settings check at start-up."""
import os
import subprocess
import sys

import pytest

from memory.librarian import services as librarian
from memory.librarian.models import QueryMemory
from tests.support import ROOT

pytestmark = pytest.mark.django_db


def test_rest_remember_ask_feedback_stats_forget(api):
    remembered = api.post("/api/v1/cache/remember", {"query": "What port?", "answer": "9020", "pin": True}, format="json")
    assert remembered.status_code == 201
    assert (remembered.json()["cache_tier"], remembered.json()["pinned"]) == ("warm", True)
    assert api.post("/api/v1/cache/remember", {"query": "what  port?", "answer": "9020", "pin": True},
                    format="json").status_code == 200
    asked = api.post("/api/v1/cache/ask", {"query": "WHAT PORT?"}, format="json").json()
    assert {k: asked[k] for k in ("answer", "cached", "cache_tier", "ask_count", "confidence", "match")} == {
        "answer": "9020", "cached": True, "cache_tier": "warm", "ask_count": 1, "confidence": 1.0, "match": "exact"}
    assert asked["matched_query"] == "What port?"
    feedback = api.post("/api/v1/cache/feedback", {"query": "What port?", "helpful": False}, format="json").json()
    assert (feedback["feedback_negative"], feedback["confidence"], feedback["dropped"]) == (1, 0.8, False)
    stats = api.get("/api/v1/cache/stats?days=7").json()
    assert (stats["asks"], stats["exact_hits"], stats["hit_rate"], stats["cached_answers"]) == (1, 1, 1.0, 1)
    assert len(stats["series"]) == 7 and stats["series"][-1]["asks"] == 1
    forgotten = api.post("/api/v1/cache/forget", {"query": "What port?"}, format="json")
    assert forgotten.json() == {"forgotten": True, "query": "What port?", "had_answer": True}
    assert not QueryMemory.objects.exists()


def test_rest_errors_name_the_field(api):
    empty = api.post("/api/v1/cache/ask", {"query": "  "}, format="json")
    assert empty.status_code == 400 and "query" in empty.json()["error"]["fields"]
    missing = api.post("/api/v1/cache/remember", {"query": "q"}, format="json")
    assert missing.status_code == 400 and "answer" in missing.json()["error"]["fields"]
    big = api.post("/api/v1/cache/remember", {"query": "q", "answer": "x" * (1024 * 1024 + 1)}, format="json")
    assert big.status_code == 413 and big.json()["error"]["fields"] == {"answer": [big.json()["error"]["message"]]}
    unknown = api.post("/api/v1/cache/forget", {"query": "never asked"}, format="json")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    assert api.post("/api/v1/cache/feedback", {"query": "never asked", "helpful": True}, format="json").status_code == 404
    assert api.post("/api/v1/cache/feedback", {"query": "q", "helpful": "maybe"}, format="json").status_code == 400
    assert api.get("/api/v1/cache/stats?days=0").status_code == 400
    assert not QueryMemory.objects.exists()


def test_rest_needs_a_token(anonymous_api):
    assert anonymous_api.post("/api/v1/cache/ask", {"query": "q"}, format="json").status_code == 401
    assert anonymous_api.get("/api/v1/cache/stats").status_code == 401


def test_admin_lists_by_tier_with_charts_and_pins_and_forgets(client, staff_user):
    client.force_login(staff_user)
    a, _ = librarian.librarian_remember(query="alpha question", answer="alpha answer")
    b, _ = librarian.librarian_remember(query="beta question", answer="beta answer")
    librarian.librarian_ask(query="alpha question")
    page = client.get("/admin/librarian/querymemory/?tier__exact=warm")
    assert page.status_code == 200
    html = page.content.decode()
    assert "alpha question" in html and "Hit rate per day" in html and "Cached answers per tier" in html
    assert "1 exact, 0 semantic hits of 1 asks" in html
    changelist = "/admin/librarian/querymemory/"
    client.post(changelist, {"action": "pin", "_selected_action": [a.pk]})
    a.refresh_from_db()
    assert a.pinned and a.expires_at is None
    client.post(changelist, {"action": "unpin", "_selected_action": [a.pk]})
    a.refresh_from_db()
    assert not a.pinned and a.expires_at is not None
    client.post(changelist, {"action": "forget", "_selected_action": [b.pk]})
    assert list(QueryMemory.objects.values_list("query_text", flat=True)) == ["alpha question"]


def test_admin_edit_remembers_the_new_answer(client, staff_user):
    client.force_login(staff_user)
    entry, _ = librarian.librarian_remember(query="gamma", answer="old")
    response = client.post(f"/admin/librarian/querymemory/{entry.pk}/change/", {"answer": "new", "pinned": "on"})
    assert response.status_code == 302
    entry.refresh_from_db()
    assert (entry.answer, entry.answer_version, entry.pinned) == ("new", 2, True)
    client.post(f"/admin/librarian/querymemory/{entry.pk}/delete/", {"post": "yes"})
    assert not QueryMemory.objects.exists()


@pytest.mark.parametrize("variable, value", [
    ("LIBRARIAN_SIMILARITY_THRESHOLD", "1.5"),
    ("LIBRARIAN_CACHE_THRESHOLD", "0"),
    ("LIBRARIAN_MAX_CACHED", "lots"),
    ("LIBRARIAN_JUDGMENT_MODEL", "true"),  # with the default offline extractive provider
])
def test_out_of_range_settings_refuse_to_start(tmp_path, variable, value):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev", "WINNI_DATA_DIR": str(tmp_path),
           "DATABASE_URL": "postgresql://x@/y?host=/nonexistent", "REDIS_URL": "redis://127.0.0.1:1/0", variable: value}
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and variable in result.stderr.splitlines()[-1]
