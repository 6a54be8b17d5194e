from django.urls import path

from conversations import api

urlpatterns = [
    path("conversations/", api.ConversationsApi.as_view(), name="conversations"),
    path("conversations/bulk/", api.MessagesBulkStoreApi.as_view(), name="conversation-messages-bulk"),
    path("conversations/<str:conversation_id>/", api.ConversationDetailApi.as_view(), name="conversation-detail"),
    path(
        "conversations/<str:conversation_id>/messages/",
        api.MessageStoreApi.as_view(),
        name="conversation-messages",
    ),
    path("sessions/<str:session_id>/conversations/", api.SessionConversationListApi.as_view(), name="session-conversations"),
    path("messages/search/", api.MessageSearchApi.as_view(), name="messages-search"),
    path("fiedler-results/", api.FiedlerResultsApi.as_view(), name="fiedler-results"),
    path("fiedler-results/batch/", api.FiedlerResultsBatchApi.as_view(), name="fiedler-results-batch"),
    path(
        "fiedler-results/correlation/<str:correlation_id>/",
        api.FiedlerCorrelationApi.as_view(),
        name="fiedler-results-correlation",
    ),
]
