"""The medallion admin: structured editor with inline schema errors, history with diffs, archive."""
import json

import pytest

from medallions import services
from medallions.models import Medallion, MedallionRevision
from tests.medallion_support import document

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, staff_user):
    client.force_login(staff_user)
    return client


def _form(**overrides):
    doc = document()
    data = {
        "graph_nodes": "repo:muse\nmodule:cli", "tags": "project_state", "status": "active",
        "high_level": doc["summary"]["high_level"], "subsystems": json.dumps(doc["summary"]["subsystems"]),
        "decisions": json.dumps(doc["decisions"]), "open_questions": json.dumps(doc["open_questions"]),
        "affordances": json.dumps(doc["affordances"]), "_save": "Save",
    }
    data.update(overrides)
    return data


def test_add_through_the_editor(admin_client):
    response = admin_client.post("/admin/medallions/medallion/add/", _form())
    assert response.status_code == 302, response.content.decode()[:2000]
    medallion = Medallion.objects.get()
    assert medallion.graph_nodes == ["repo:muse", "module:cli"] and medallion.tags == ["project_state"]
    assert medallion.decisions == document()["decisions"]
    page = admin_client.get(f"/admin/medallions/medallion/{medallion.pk}/change/").content.decode()
    # Each decision and open question is a row of its own form.
    assert 'name="rows-decisions-0-statement"' in page and "Use Python 3.11+" in page
    assert 'name="rows-decisions-0-confidence" value="0.9"' in page
    assert 'name="rows-open_questions-0-question"' in page and "Should we use async?" in page


def test_schema_errors_show_inline_on_their_section_and_save_nothing(admin_client):
    bad = json.dumps([{"id": "D-1", "statement": "x", "confidence": 3}])
    response = admin_client.post("/admin/medallions/medallion/add/",
                                 _form(decisions=bad, open_questions="[{", graph_nodes=""))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["decisions"] == ["decisions[0].confidence: Input should be less than or equal to 1"]
    assert errors["open_questions"][0].startswith("not valid JSON")
    assert Medallion.objects.count() == 0
    response = admin_client.post("/admin/medallions/medallion/add/",
                                 _form(open_questions=json.dumps([{"id": "Q", "question": "x", "priority": "now"}])))
    assert "open_questions[0].priority" in response.context["adminform"].form.errors["open_questions"][0]
    assert Medallion.objects.count() == 0


def test_change_keeps_a_revision_and_shows_the_diff(admin_client):
    medallion = services.medallion_create(document=document())
    url = f"/admin/medallions/medallion/{medallion.pk}/change/"
    response = admin_client.post(url, _form(high_level="Muse now plays audio too."))
    assert response.status_code == 302
    revision = MedallionRevision.objects.get()
    assert revision.actor == "admin:root"
    # The HISTORY button's page shows Winni's revisions with the diff.
    page = admin_client.get(f"/admin/medallions/medallion/{medallion.pk}/history/").content.decode()
    assert "revision 1" in page
    assert "-    &quot;high_level&quot;: &quot;Muse is a CLI for music notes.&quot;" in page
    assert "+    &quot;high_level&quot;: &quot;Muse now plays audio too.&quot;" in page
    assert admin_client.post(url, _form(decisions="{}")).status_code == 200
    assert MedallionRevision.objects.count() == 1


def test_archive_action_and_delete(admin_client):
    first = services.medallion_create(document=document())
    second = services.medallion_create(document=document())
    response = admin_client.post("/admin/medallions/medallion/", {
        "action": "archive_selected", "_selected_action": [str(first.pk)]})
    assert response.status_code == 302
    assert Medallion.objects.get(pk=first.pk).status == "archived"
    assert Medallion.objects.get(pk=second.pk).status == "active"
    assert admin_client.get("/admin/medallions/medallion/?status__exact=archived").status_code == 200
    admin_client.post(f"/admin/medallions/medallion/{second.pk}/delete/", {"post": "yes"})
    assert list(Medallion.objects.values_list("pk", flat=True)) == [first.pk]
    assert admin_client.get("/admin/medallions/medallionjob/").status_code == 200
