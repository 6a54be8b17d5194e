from django.urls import path

from conversations import api

urlpatterns = [
    path("conversations/", api.ConversationBeginApi.as_view(), name="conversation-begin"),
    path("conversations/<str:conversation_id>/", api.ConversationDetailApi.as_view(), name="conversation-detail"),
    path(
        "conversations/<str:conversation_id>/messages/",
        api.MessageStoreApi.as_view(),
        name="conversation-messages",
    ),
]
