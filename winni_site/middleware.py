"""Paths and errors under /api/: every route answers with or without its trailing slash (no
redirect: a redirected POST loses its body), an unknown path gets the JSON error shape naming the
nearest real path, and an unhandled exception a JSON 500 instead of Django's HTML pages."""
from __future__ import annotations

import difflib
import logging
import re
from functools import lru_cache
from typing import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404

from core.errors import error_body

API_PREFIX = "/api/"
NO_SUCH_PATH = "no API endpoint at {path}"
logger = logging.getLogger("winni.api")


def _pattern_text(pattern: URLPattern | URLResolver) -> str:
    """A route as a reader writes it: `conversations/{conversation_id}/` for both path() and
    re_path() routes."""
    text = str(pattern.pattern)
    text = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", text)  # re_path(): (?P<name>...)
    text = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", text)  # path(): <str:name>
    return text.lstrip("^").replace("/?$", "/").rstrip("$").replace("\\", "")


def _walk(patterns: list, prefix: str) -> list[str]:
    found = []
    for pattern in patterns:
        text = prefix + _pattern_text(pattern)
        if isinstance(pattern, URLResolver):
            found += _walk(pattern.url_patterns, text)
        else:
            found.append("/" + text)
    return found


@lru_cache(maxsize=1)
def api_paths() -> tuple[str, ...]:
    """Every route under /api/, as `/api/v1/conversations/{conversation_id}/`."""
    return tuple(sorted({path for path in _walk(get_resolver().url_patterns, "") if path.startswith(API_PREFIX)}))


def nearest_api_path(path: str) -> str | None:
    """The known route most like `path` (its ids replaced by the route's {placeholders})."""
    matches = difflib.get_close_matches(path, api_paths(), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _resolves(path: str) -> bool:
    try:
        resolve(path)
    except Resolver404:
        return False
    return True


def api_not_found(path: str) -> JsonResponse:
    message = NO_SUCH_PATH.format(path=path)
    nearest = nearest_api_path(path)
    hint = f"; did you mean {nearest}?" if nearest else ""
    body = error_body("not_found", f"{message}{hint} Every endpoint is listed at /api/docs/ (OpenAPI: /api/schema/)")
    if nearest:
        body["error"]["nearest_path"] = nearest
    return JsonResponse(body, status=404)


class ApiPathsMiddleware:
    """Before URL resolution: an /api/ path that matches no route is tried with its trailing slash
    added or removed (and served under that spelling, without a redirect); if neither matches,
    the answer is a JSON 404. After: an exception no view handled becomes a JSON 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if path.startswith(API_PREFIX) and not _resolves(path):
            other = path[:-1] if path.endswith("/") else path + "/"
            if not _resolves(other):
                return api_not_found(path)
            request.path_info = other
            request.path = request.path[: len(request.path) - len(path)] + other
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path_info.startswith(API_PREFIX):
            return None
        logger.exception("unhandled error in %s %s", request.method, request.path_info)
        return JsonResponse(error_body("server_error", f"internal error ({type(exception).__name__}); "
                                       "the server log has the details"), status=500)
