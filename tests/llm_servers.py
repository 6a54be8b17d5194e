"""Small real HTTP servers speaking the OpenAI chat-completions and Anthropic Messages protocols,
replying from a script, for the medallion LLM tests."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HANG = object()  # reply after the client has given up (a timeout)


class FakeLLMServer:
    def __init__(self, protocol: str, replies: list[Any]) -> None:
        self.protocol, self.replies, self.requests = protocol, list(replies), []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                reply = server.replies.pop(0) if server.replies else "{}"
                if reply is HANG:
                    server.release.wait(5)
                    reply = "{}"
                status, payload = (reply if isinstance(reply, tuple) else (200, server.wrap(reply)))
                data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def wrap(self, text: str) -> dict[str, Any]:
        if self.protocol == "openai":
            return {"id": "c1", "object": "chat.completion", "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}]}
        return {"id": "m1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
                "content": [{"type": "text", "text": text}]}

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
