from django.urls import path

from memory.librarian import api

urlpatterns = [
    path("cache/ask", api.CacheAskApi.as_view(), name="cache-ask"),
    path("cache/remember", api.CacheRememberApi.as_view(), name="cache-remember"),
    path("cache/forget", api.CacheForgetApi.as_view(), name="cache-forget"),
    path("cache/feedback", api.CacheFeedbackApi.as_view(), name="cache-feedback"),
    path("cache/stats", api.CacheStatsApi.as_view(), name="cache-stats"),
]
