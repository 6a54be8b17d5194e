from importlib.util import find_spec

from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from agents.api import (
    CaptureCommitsApi,
    CaptureEventApi,
    CaptureEventBatchApi,
    CaptureHookApi,
    CaptureSessionStartApi,
    RecallContextApi,
)
from core.health import health_report
from winni_site.projects import ProjectDetailApi, ProjectListApi, ProjectMergeApi
from winni_site.recall import RecallApi
from winni_site.tokens import ExportApi, ImportApi, TokenListCreateApi, TokenRevokeApi


def healthz(request: HttpRequest) -> JsonResponse:
    """Open (no token): the database, Redis, the Celery worker's heartbeat and the apps' checks."""
    healthy, report = health_report()
    return JsonResponse(report, status=200 if healthy else 503)


def _app_api_urls() -> list:
    """Each app's `<app>/urls.py` is mounted under /api/v1/."""
    patterns = []
    for app_name in settings.WINNI_APPS:
        if find_spec(f"{app_name}.urls"):
            patterns.append(path("api/v1/", include(f"{app_name}.urls")))
    return patterns


urlpatterns = [
    # The admin is the site's front page; browsers that ask for /favicon.ico get the admin's icon.
    path("", RedirectView.as_view(pattern_name="admin:index"), name="home"),
    path("favicon.ico", RedirectView.as_view(url=static("winni_admin/favicon.svg"), permanent=True)),
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    path("api/v1/capture/events", CaptureEventApi.as_view(), name="capture-events"),
    path("api/v1/capture/events/batch", CaptureEventBatchApi.as_view(), name="capture-events-batch"),
    path("api/v1/capture/hook", CaptureHookApi.as_view(), name="capture-hook"),
    path("api/v1/capture/session-start", CaptureSessionStartApi.as_view(), name="capture-session-start"),
    path("api/v1/capture/commits", CaptureCommitsApi.as_view(), name="capture-commits"),
    path("api/v1/recall", RecallApi.as_view(), name="recall"),
    path("api/v1/recall/context", RecallContextApi.as_view(), name="recall-context"),
    path("api/v1/projects/", ProjectListApi.as_view(), name="project-list"),
    path("api/v1/projects/<str:slug>/", ProjectDetailApi.as_view(), name="project-detail"),
    path("api/v1/projects/<str:slug>/merge/", ProjectMergeApi.as_view(), name="project-merge"),
    path("api/v1/tokens/", TokenListCreateApi.as_view(), name="token-list"),
    path("api/v1/tokens/<str:name>/", TokenRevokeApi.as_view(), name="token-revoke"),
    path("api/v1/export", ExportApi.as_view(), name="export"),
    path("api/v1/import", ImportApi.as_view(), name="import"),
    *_app_api_urls(),
]
