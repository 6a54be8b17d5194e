from django.urls import path, re_path

from medallions import api

# The fixed paths come first (and work with or without a trailing slash, as the hooks call them).
urlpatterns = [
    re_path(r"^medallions/schema/?$", api.MedallionSchemaApi.as_view(), name="medallion-schema"),
    re_path(r"^medallions/checkpoint/?$", api.MedallionCheckpointApi.as_view(), name="medallion-checkpoint"),
    re_path(r"^medallions/jobs/(?P<job_id>[^/]+)/?$", api.MedallionJobApi.as_view(), name="medallion-job"),
    path("medallions/", api.MedallionListApi.as_view(), name="medallion-list"),
    re_path(r"^medallions/(?P<medallion_id>[^/]+)/history/?$", api.MedallionHistoryApi.as_view(),
            name="medallion-history"),
    re_path(r"^medallions/(?P<medallion_id>[^/]+)/archive/?$", api.MedallionArchiveApi.as_view(),
            name="medallion-archive"),
    re_path(r"^medallions/(?P<medallion_id>[^/]+)/?$", api.MedallionDetailApi.as_view(), name="medallion-detail"),
]
