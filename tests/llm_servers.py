"""Small real HTTP servers speaking the OpenAI chat-completions and Anthropic Messages protocols,
replying from a script, for the medallion and digest LLM tests. `usage`: (input, output) tokens
reported in each reply's usage fields (none when None, as some servers do)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HANG = object()  # reply after the client has given up (a timeout)


class FakeLLMServer:
    def __init__(self, protocol: str, replies: list[Any], usage: tuple[int, int] | None = None) -> None:
        self.protocol, self.replies, self.requests, self.usage = protocol, list(replies), [], usage
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
            reply: dict[str, Any] = {"id": "c1", "object": "chat.completion", "model": "m",
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": text}}]}
            if self.usage:
                reply["usage"] = {"prompt_tokens": self.usage[0], "completion_tokens": self.usage[1],
                                  "total_tokens": sum(self.usage)}
            return reply
        reply = {"id": "m1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "end_turn",
                 "content": [{"type": "text", "text": text}]}
        if self.usage:
            # As Anthropic reports a prompt that was partly cached: the input in three fields.
            reply["usage"] = {"input_tokens": self.usage[0] - 100, "cache_read_input_tokens": 100,
                              "cache_creation_input_tokens": 0, "output_tokens": self.usage[1]}
        return reply

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
