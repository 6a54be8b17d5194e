import pytest

from conversations import services
from conversations.models import Conversation, FiedlerResult, Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, staff_user):
    client.force_login(staff_user)
    return client


def test_conversation_list_shows_counts_and_activity(admin_client):
    conversation, _ = services.messages_store_bulk(
        session_id="admin-s",
        messages=[
            {"role": "user", "content": "first words", "created_at": "2024-01-02T03:04:05Z"},
            {"role": "assistant", "content": "last words", "created_at": "2024-01-09T03:04:05Z"},
        ],
    )
    page = admin_client.get("/admin/conversations/conversation/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "admin-s" in html and "Jan. 2, 2024" in html and "Jan. 9, 2024" in html
    row = page.context["cl"].result_list[0]
    assert row._message_count == 2


def test_search_box_finds_session_ids_and_message_words(admin_client):
    by_words, _ = services.messages_store_bulk(messages=[{"role": "user", "content": "the albatross returns"}])
    by_session = services.conversation_begin(session_id="albatross-session")
    services.conversation_begin(session_id="other")
    results = admin_client.get("/admin/conversations/conversation/", {"q": "albatross"}).context["cl"].result_list
    assert {c.pk for c in results} == {by_words.pk, by_session.pk}


def test_admin_delete_goes_through_the_service(admin_client):
    conversation, _ = services.messages_store_bulk(messages=[{"role": "user", "content": "bye"}] * 3)
    other, _ = services.messages_store_bulk(messages=[{"role": "user", "content": "stay"}])
    response = admin_client.post(f"/admin/conversations/conversation/{conversation.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Conversation.objects.filter(pk=conversation.pk).exists()
    assert Message.objects.count() == 1
    bulk = admin_client.post(
        "/admin/conversations/conversation/",
        {"action": "delete_selected", "_selected_action": [str(other.pk)], "post": "yes"},
    )
    assert bulk.status_code == 302 and Conversation.objects.count() == 0 and Message.objects.count() == 0


def test_fiedler_list_filters_and_columns(admin_client):
    services.fiedler_results_store_batch(results=[
        {"correlation_id": "r", "model": "gpt-5", "output": "a", "tokens_prompt": 1234, "duration_seconds": 3.5},
        {"correlation_id": "r", "model": "claude", "output": "b", "status": "error"},
    ])
    page = admin_client.get("/admin/conversations/fiedlerresult/", {"model": "gpt-5"})
    assert page.status_code == 200
    rows = page.context["cl"].result_list
    assert [r.model for r in rows] == ["gpt-5"]
    assert "1234" in page.content.decode() and "3.5" in page.content.decode()
    assert [r.model for r in admin_client.get("/admin/conversations/fiedlerresult/", {"status": "error"}).context["cl"].result_list] == ["claude"]
    result = FiedlerResult.objects.get(model="claude")
    admin_client.post(f"/admin/conversations/fiedlerresult/{result.pk}/delete/", {"post": "yes"})
    assert list(FiedlerResult.objects.values_list("model", flat=True)) == ["gpt-5"]
