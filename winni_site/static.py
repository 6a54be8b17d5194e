"""Static files (the admin's, Swagger UI's) served by the ASGI application before Django.

WhiteNoise finds the files and decides the answer (caching headers, compressed variants, ranges,
304s); this module only sends it the ASGI way. Through Django, under ASGI, each file was a
FileResponse whose synchronous iterator Django must consume on a thread, and it said so on the
console for every file ("StreamingHttpResponse must consume synchronous iterators in order to
serve them asynchronously", two lines each, several per /api/docs/ page). Served here, a file
takes none of Django's request threads (winni_site.asgi) and prints nothing; the file is read in
a worker thread, a chunk at a time, so a large one never blocks the event loop."""
from __future__ import annotations

from typing import Any

import anyio
from django.conf import settings
from whitenoise.middleware import WhiteNoiseMiddleware

CHUNK = 64 * 1024


class StaticFiles:
    """Everything under STATIC_URL that WhiteNoise knows (STATIC_ROOT and, with
    WHITENOISE_USE_FINDERS, every app's static folder); `None` from `find` lets the request go
    on to Django (a JSON 404 there)."""

    def __init__(self) -> None:
        # WhiteNoise's Django middleware reads the WHITENOISE_* settings and indexes the files;
        # only its lookup and its answers are used here.
        self.whitenoise = WhiteNoiseMiddleware(settings=settings)
        self.prefix = self.whitenoise.static_prefix

    def find(self, path: str) -> Any:
        if not path.startswith(self.prefix):
            return None
        if self.whitenoise.autorefresh:
            return self.whitenoise.find_file(path)
        return self.whitenoise.files.get(path)

    async def serve(self, static_file: Any, scope: dict[str, Any], send: Any) -> None:
        # WhiteNoise reads request headers as WSGI names them (HTTP_IF_NONE_MATCH, HTTP_RANGE, …).
        environ = {"HTTP_" + key.decode("latin-1").upper().replace("-", "_"): value.decode("latin-1")
                   for key, value in scope.get("headers") or []}
        response = static_file.get_response(scope["method"], environ)
        await send({"type": "http.response.start", "status": int(response.status),
                    "headers": [(key.lower().encode("latin-1"), str(value).encode("latin-1"))
                                for key, value in response.headers]})
        if response.file is None:
            await send({"type": "http.response.body", "body": b""})
            return
        try:
            while True:
                chunk = await anyio.to_thread.run_sync(response.file.read, CHUNK)
                if not chunk:
                    break
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            response.file.close()
