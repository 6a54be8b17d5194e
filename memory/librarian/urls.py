from django.urls import path

from memory import librarian_api as api

urlpatterns = [
    path("ask", api.CacheAskApi.as_view(), name="cache-ask"),
    path("remember", api.CacheRememberApi.as_view(), name="cache-remember"),
    path("forget", api.CacheForgetApi.as_view(), name="cache-forget"),
    path("feedback", api.CacheFeedbackApi.as_view(), name="cache-feedback"),
    path("stats", api.CacheStatsApi.as_view(), name="cache-stats"),
]
