from django.urls import path

from memory import api

urlpatterns = [
    path("memories/", api.MemoryCreateListApi.as_view(), name="memories"),
    # Before <memory_id>: "search" is not a memory's id (either spelling, the middleware adds or drops the slash).
    path("memories/search/", api.MemorySearchApi.as_view(), name="memories-search"),
    path("memories/<str:memory_id>/", api.MemoryDetailApi.as_view(), name="memory-detail"),
    path("memories/<str:memory_id>/history/", api.MemoryHistoryApi.as_view(), name="memory-history"),
]
