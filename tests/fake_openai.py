"""A small fake of OpenAI's Responses API (Codex CLI) and Chat Completions API (Copilot CLI's BYOK
provider) on loopback, for running those real CLIs offline. Like tests.fake_anthropic, its "model"
answers each prompt with "Reply to: <prompt>", answers a prompt containing USE_TOOL with a call of
the first offered tool whose name contains `tool_name`, and answers a tool result with
"Tool said: <result>". Every request is recorded."""
from __future__ import annotations

import json
import re
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from tests.fake_http import JsonHandler

USE_TOOL = "USE_TOOL"


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for part in content or []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
    return out


def own_words(texts: list[str]) -> str:
    """The user's own words: the agents add context blocks (<environment_context>, hook text) as
    separate parts or messages that start with "<" or "#", or put <tag>...</tag> blocks before the
    prompt in the same text (Copilot's <current_datetime>)."""
    texts = [re.sub(r"^(\s*<([a-z_]+)>.*?</\2>)+\s*", "", t, flags=re.S) for t in texts]
    own = [t for t in texts if t.strip() and not t.lstrip().startswith(("<", "#"))]
    return (own[-1] if own else "").strip()


class FakeOpenAI:
    def __init__(self, tool_name: str = "dewey_get_startup_context", tool_args: dict | None = None):
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.tool_name = tool_name
        self.tool_args = tool_args or {}
        self.counter = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(JsonHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                path = self.path.split("?")[0]
                if path.endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model",
                                                                  "created": 0, "owned_by": "winni"}]})
                    return
                self._json(404, {"error": {"message": path}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                with fake.lock:
                    fake.paths.append(path)
                if path.endswith("/responses"):
                    with fake.lock:
                        fake.requests.append({"api": "responses", **body})
                    self._responses(body)
                elif path.endswith("/chat/completions"):
                    with fake.lock:
                        fake.requests.append({"api": "chat", **body})
                    self._chat(body)
                else:
                    self._json(404, {"error": {"message": f"no such path {path}"}})

            def _sse(self, events: list[tuple[str | None, Any]]) -> None:
                chunks = []
                for name, data in events:
                    head = f"event: {name}\n" if name else ""
                    payload = data if isinstance(data, str) else json.dumps(data)
                    chunks.append(f"{head}data: {payload}\n\n")
                raw = "".join(chunks).encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                self.wfile.flush()

            def _responses(self, body: dict) -> None:
                rid = f"resp_{fake.next_id()}"
                items = fake.responses_answer(body)
                events: list[tuple[str | None, Any]] = [
                    ("response.created", {"type": "response.created", "response": {"id": rid}})]
                for item in items:
                    events.append(("response.output_item.added", {"type": "response.output_item.added", "item": item}))
                    events.append(("response.output_item.done", {"type": "response.output_item.done", "item": item}))
                events.append(("response.completed", {"type": "response.completed", "response": {
                    "id": rid, "usage": {"input_tokens": 42, "input_tokens_details": None, "output_tokens": 7,
                                         "output_tokens_details": None, "total_tokens": 49}}}))
                self._sse(events)

            def _chat(self, body: dict) -> None:
                message = fake.chat_answer(body)
                cid = f"chatcmpl-{fake.next_id()}"
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                usage = {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
                if not body.get("stream"):
                    self._json(200, {"id": cid, "object": "chat.completion", "created": 0,
                                     "model": body.get("model", "fake-model"),
                                     "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                     "usage": usage})
                    return
                base = {"id": cid, "object": "chat.completion.chunk", "created": 0,
                        "model": body.get("model", "fake-model")}
                delta: dict[str, Any] = {"role": "assistant"}
                if message.get("content"):
                    delta["content"] = message["content"]
                if message.get("tool_calls"):
                    delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
                events: list[tuple[str | None, Any]] = [
                    (None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
                    (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
                    (None, {**base, "choices": [], "usage": usage}),
                    (None, "[DONE]"),
                ]
                self._sse(events)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def next_id(self) -> int:
        with self.lock:
            self.counter += 1
            return self.counter

    def _tool(self, tools: list[dict]) -> dict | None:
        for tool in tools or []:
            name = tool.get("name") or (tool.get("function") or {}).get("name") or ""
            if self.tool_name in name:
                return tool
            for inner in tool.get("tools") or []:  # a namespace of tools (Codex's MCP servers)
                if self.tool_name in (inner.get("name") or ""):
                    return {**inner, "namespace": tool.get("name")}
        return None

    # --- Responses API (Codex) ---

    def responses_answer(self, body: dict) -> list[dict]:
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        last = items[-1] if items else {}
        if last.get("type") == "function_call_output":
            output = last.get("output")
            text = output if isinstance(output, str) else json.dumps(output)
            return [self._message("Tool said: " + text[:2000])]
        users = [i for i in items if i.get("role") == "user"]
        prompt = own_words([t for u in users[-1:] for t in _texts(u.get("content"))])
        tool = self._tool(body.get("tools") or [])
        if USE_TOOL in prompt and tool is not None:
            call = {"type": "function_call", "id": f"fc_{self.next_id()}", "call_id": f"call_{self.next_id()}",
                    "name": tool["name"], "arguments": json.dumps(self.tool_args), "status": "completed"}
            if tool.get("namespace"):
                call["namespace"] = tool["namespace"]
            return [call]
        return [self._message(f"Reply to: {prompt}")]

    def _message(self, text: str) -> dict:
        return {"type": "message", "role": "assistant", "id": f"msg_{self.next_id()}", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    # --- Chat Completions (Copilot BYOK) ---

    def chat_answer(self, body: dict) -> dict:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return {"role": "assistant", "content": "Tool said: " + "\n".join(_texts(last.get("content")))[:2000]}
        users = [m for m in messages if m.get("role") == "user"]
        prompt = own_words([t for u in users[-1:] for t in _texts(u.get("content"))])
        tool = self._tool(body.get("tools") or [])
        if USE_TOOL in prompt and tool is not None:
            name = (tool.get("function") or {}).get("name") or tool.get("name")
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{self.next_id()}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(self.tool_args)}}]}
        return {"role": "assistant", "content": f"Reply to: {prompt}"}

    def model_requests(self) -> list[dict]:
        """Requests of the conversation itself (they offer tools); side requests (titles) don't."""
        return [r for r in self.requests if r.get("tools")]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
