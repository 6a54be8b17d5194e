"""A small real HTTP server speaking the embedding protocols of Ollama (/api/embed) and OpenAI
(/v1/embeddings), for the embedding provider and worker tests."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from tests.support import free_port

# A held request is answered at the latest after this long, so a forgotten release() cannot hang a test.
HOLD_LIMIT = 90.0


def length_vector(text: str, dims: int) -> list[float]:
    """Only the first component depends on the text (its length): enough to check answer order."""
    return [float(len(text) % 7 + 1)] + [0.5] * (dims - 1)


class FakeProvider:
    """Answers Ollama's /api/embed and OpenAI's /v1/embeddings with `dims`-long vectors, one
    `vector_for(text, dims)` per input text.

    `hold_next()` makes the next request wait (after it has been recorded) until `release()`, so
    a test knows its client is in the middle of an embedding call; `held` is set when it arrives
    and `held_client` is the client's (host, port)."""

    def __init__(self, vector_for: Callable[[str, int], list[float]] = length_vector) -> None:
        self.dims = 384
        self.status = 200
        self.vector_for = vector_for
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.held = threading.Event()
        self.held_client: tuple[str, int] | None = None
        self._hold_next = False
        self._released = threading.Event()
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with fake._lock:
                    fake.requests.append((self.path, body))
                    hold, fake._hold_next = fake._hold_next, False
                if hold:
                    fake.held_client = self.client_address
                    fake.held.set()
                    fake._released.wait(HOLD_LIMIT)
                texts = body["input"]
                vectors = [fake.vector_for(text, fake.dims) for text in texts]
                if self.path == "/api/embed":
                    answer: Any = {"model": body["model"], "embeddings": vectors}
                else:
                    answer = {"data": [{"index": i, "embedding": v} for i, v in reversed(list(enumerate(vectors)))]}
                raw = json.dumps(answer).encode()
                # The client may have died while its request was held (a killed worker process).
                try:
                    self.send_response(fake.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hold_next(self) -> None:
        with self._lock:
            self.held.clear()
            self._released.clear()
            self.held_client = None
            self._hold_next = True

    def release(self) -> None:
        self._released.set()

    def stop(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()
