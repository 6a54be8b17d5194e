from django.urls import path

from contexts import api

urlpatterns = [
    path("contexts/", api.ContextListCreateApi.as_view(), name="context-list"),
    # Before <name>: a context literally named "active" is reached through the MCP tools.
    path("contexts/active/", api.ContextActiveApi.as_view(), name="context-active"),
    path("contexts/<str:name>/", api.ContextDetailApi.as_view(), name="context-detail"),
    path("contexts/<str:name>/activate/", api.ContextActivateApi.as_view(), name="context-activate"),
    path("contexts/<str:name>/audit/", api.ContextAuditApi.as_view(), name="context-audit"),
]
