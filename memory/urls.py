from django.urls import path

from memory import api

urlpatterns = [
    path("memories/", api.MemoryCreateListApi.as_view(), name="memories"),
    path("memories/search", api.MemorySearchApi.as_view(), name="memories-search"),
    path("memories/<str:memory_id>/", api.MemoryDetailApi.as_view(), name="memory-detail"),
    path("memories/<str:memory_id>/history/", api.MemoryHistoryApi.as_view(), name="memory-history"),
]
