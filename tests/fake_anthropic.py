"""A small fake of the Anthropic Messages API on loopback, for running the real Claude Code CLI
offline (ANTHROPIC_BASE_URL). It records every request; its "model" answers each prompt with
"Reply to: <prompt>", answers a prompt containing USE_TOOL with a tool_use of the named tool, and
answers a tool result with "Tool said: <result>"."""
from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from tests.fake_http import JsonHandler

USE_TOOL = "USE_TOOL"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            parts.append(_text_of(block.get("content")))
    return "\n".join(parts)


def prompt_of(content: Any) -> str:
    """The user's own words in a user turn: Claude Code adds <system-reminder> blocks around them."""
    if isinstance(content, str):
        return content.strip()
    texts = [b.get("text", "") for b in content or [] if b.get("type") == "text"]
    own = [t for t in texts if not t.lstrip().startswith("<system-reminder>")]
    return (own[-1] if own else "").strip()


class FakeAnthropic:
    def __init__(self, tool_name: str = "mcp__winni__dewey_get_startup_context", tool_input: dict | None = None):
        self.requests: list[dict[str, Any]] = []
        self.tool_name = tool_name
        self.tool_input = tool_input or {}
        self.counter = 0
        fake = self

        class Handler(JsonHandler):
            def do_HEAD(self) -> None:  # noqa: N802
                self.send_response(200)
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                self._json(200, {})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?")[0]
                if path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 42})
                    return
                if not path.endswith("/v1/messages"):
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                    return
                fake.requests.append(body)
                blocks = fake.answer(body)
                if body.get("stream"):
                    self._stream(body, blocks)
                else:
                    self._json(200, fake.message(body, blocks))

            def _stream(self, body: dict, blocks: list[dict]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                message = fake.message(body, [])
                message["stop_reason"] = None

                def send(event: str, data: dict) -> None:
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())

                send("message_start", {"type": "message_start", "message": message})
                for index, block in enumerate(blocks):
                    if block["type"] == "text":
                        send("content_block_start", {"type": "content_block_start", "index": index,
                                                     "content_block": {"type": "text", "text": ""}})
                        send("content_block_delta", {"type": "content_block_delta", "index": index,
                                                     "delta": {"type": "text_delta", "text": block["text"]}})
                    else:
                        send("content_block_start", {"type": "content_block_start", "index": index,
                                                     "content_block": {**block, "input": {}}})
                        send("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                            "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
                    send("content_block_stop", {"type": "content_block_stop", "index": index})
                stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                send("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                       "usage": {"output_tokens": 7}})
                send("message_stop", {"type": "message_stop"})
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def message(self, body: dict, blocks: list[dict]) -> dict:
        self.counter += 1
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return {"id": f"msg_fake_{self.counter}", "type": "message", "role": "assistant",
                "model": body.get("model", "claude-fake"), "content": blocks, "stop_reason": stop,
                "stop_sequence": None, "usage": {"input_tokens": 42, "output_tokens": 7}}

    def answer(self, body: dict) -> list[dict]:
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        content = users[-1].get("content") if users else ""
        if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            return [{"type": "text", "text": "Tool said: " + _text_of(content)[:2000]}]
        prompt = prompt_of(content)
        if USE_TOOL in prompt and body.get("tools"):
            self.counter += 1
            return [{"type": "tool_use", "id": f"toolu_fake_{self.counter}", "name": self.tool_name,
                     "input": self.tool_input}]
        return [{"type": "text", "text": f"Reply to: {prompt}"}]

    def main_requests(self) -> list[dict]:
        """Requests of the main conversation (they carry tools); side requests (titles, quota) don't."""
        return [r for r in self.requests if r.get("tools")]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
