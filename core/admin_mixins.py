"""Behaviour several apps' admin pages share (core imports no app, so every app may use these)."""
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect

from core.errors import ApplicationError

if TYPE_CHECKING:  # the ModelAdmin these mix into, for the checker only (at run time, object)
    from django.contrib.admin import ModelAdmin

    _ModelAdmin = ModelAdmin[Any]
else:
    _ModelAdmin = object


class ServiceErrorsAsMessages(_ModelAdmin):
    """A ModelAdmin whose saves go through a service: a refused save (ApplicationError, e.g. a rule
    the service enforces) is shown as an error message on the same form instead of a server error."""

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return super().changeform_view(request, *args, **kwargs)
        except ApplicationError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())


class NoDjangoLogEntries(_ModelAdmin):
    """A ModelAdmin whose HISTORY button shows Winni's own trail (audit rows, revisions), written by
    the services whichever interface made the change: Django's LogEntry would be a second trail
    nobody reads."""

    def log_addition(self, *args: Any, **kwargs: Any) -> Any:  # (Django's returns the LogEntry; nobody reads it)
        return None

    def log_change(self, *args: Any, **kwargs: Any) -> Any:  # (Django's returns the LogEntry; nobody reads it)
        return None

    def log_deletion(self, *args: Any, **kwargs: Any) -> Any:  # (Django's returns the LogEntry; nobody reads it)
        return None

    def log_deletions(self, *args: Any, **kwargs: Any) -> Any:  # (Django's returns the LogEntry; nobody reads it)
        return None
