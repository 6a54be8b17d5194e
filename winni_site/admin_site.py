"""Winni's admin site: Django's admin with the dashboard as its index, a search page over every
store, and lists that never COUNT(*) a large table on each page view.

Installed through `WinniAdminConfig` (in INSTALLED_APPS instead of django.contrib.admin), so
`admin.site` and `@admin.register` everywhere use this site."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.core.paginator import Paginator
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path
from django.utils.functional import cached_property

from winni_site import dashboard


class WinniAdminConfig(AdminConfig):
    default_site = "winni_site.admin_site.WinniAdminSite"


class EstimatedCountPaginator(Paginator):
    """An unfiltered list of a large table is counted from PostgreSQL's estimate
    (pg_class.reltuples); filtered lists and small tables are counted exactly."""

    estimated = False

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if isinstance(queryset, QuerySet) and not queryset.query.where and not queryset.query.distinct:
            estimate = dashboard.large_table_estimate(queryset.model)
            if estimate is not None:
                self.estimated = True
                return estimate
        return super().count


class WinniAdminSite(admin.AdminSite):
    site_header = "Winni"
    site_title = "Winni admin"
    index_title = "Dashboard"
    index_template = "winni_admin/index.html"
    # Winni serves no public site besides the admin, the API docs and /mcp: no "View site" link
    # (it led to a 404); the header links to the API docs instead (templates/admin/base_site.html).
    site_url = None
    # The dashboard lists every store and the header links to it: the nav sidebar only narrowed
    # wide lists (the answer cache's columns were cut off).
    enable_nav_sidebar = False

    def register(self, model_or_iterable: Any, admin_class: Any = None, **options: Any) -> None:
        """Every list in the admin paginates with estimated counts (see EstimatedCountPaginator)
        and skips the second "N total" count, whoever registers the model."""
        super().register(model_or_iterable, admin_class, **options)
        models = [model_or_iterable] if isinstance(model_or_iterable, type) else model_or_iterable
        for model in models:
            model_admin = self._registry[model]
            if model_admin.paginator is Paginator:
                model_admin.paginator = EstimatedCountPaginator  # type: ignore[misc]  # this registered admin's, not its class's
            model_admin.show_full_result_count = False  # type: ignore[misc]  # this registered admin's, not its class's

    def get_urls(self) -> list[URLResolver | URLPattern]:
        from winni_site import admin_views

        return [
            path("search/", self.admin_view(admin_views.search), name="winni_search"),
            *super().get_urls(),
        ]

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
        from winni_site import admin_views

        return super().index(request, {**admin_views.dashboard_context(request), **(extra_context or {})})

    def app_index(self, request: HttpRequest, app_label: str,  # type: ignore[override]  # may redirect (Django's always renders)
                  extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """An app with one list the user may see (the answer cache's) goes straight to that list:
        a page holding a single link is a click for nothing."""
        app = self.get_app_list(request, app_label)
        models = app[0]["models"] if app else []
        if len(models) == 1 and models[0].get("admin_url"):
            return HttpResponseRedirect(models[0]["admin_url"])
        return super().app_index(request, app_label, extra_context)

    def can_view(self, request: HttpRequest, model: type[Model] | None) -> bool:
        """The user may view this model's rows here (registered, and view or change permission)."""
        if model is None or model not in self._registry:
            return False
        return bool(self._registry[model].has_view_or_change_permission(request))
