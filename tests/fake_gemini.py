"""A small fake of the Gemini API (generateContent / streamGenerateContent / countTokens) on
loopback, for running the real Gemini CLI offline (GOOGLE_GEMINI_BASE_URL). Like
tests.fake_anthropic, its "model" answers each prompt with "Reply to: <prompt>", answers a prompt
containing USE_TOOL with a call of the first declared function whose name contains `tool_name`,
and answers a function response with "Tool said: <result>". Every request is recorded."""
from __future__ import annotations

import json
import re
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from tests.fake_http import JsonHandler

USE_TOOL = "USE_TOOL"


def own_words(parts: list[dict]) -> str:
    """The user's words: the CLI adds context parts (<session_context>...) and puts the SessionStart
    hook's text before the prompt (<hook_context>...</hook_context>)."""
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    texts = [re.sub(r"^\s*<hook_context>.*?</hook_context>\s*", "", t, flags=re.S) for t in texts]
    own = [t for t in texts if t.strip() and not t.lstrip().startswith(("<", "#"))]
    return own[-1].strip() if own else ""


class FakeGemini:
    def __init__(self, tool_name: str = "dewey_get_startup_context", tool_args: dict | None = None):
        self.requests: list[dict[str, Any]] = []
        self.tool_name = tool_name
        self.tool_args = tool_args or {}
        self.lock = threading.Lock()
        fake = self

        class Handler(JsonHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                self._json(200, {"models": [{"name": "models/gemini-fake", "supportedGenerationMethods": [
                    "generateContent", "streamGenerateContent", "countTokens"]}]})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                if path.endswith(":countTokens"):
                    self._json(200, {"totalTokens": 42})
                    return
                if path.endswith(":embedContent") or path.endswith(":batchEmbedContents"):
                    self._json(200, {"embeddings": [{"values": [0.0] * 8}]})
                    return
                with fake.lock:
                    fake.requests.append({"path": path, **body})
                response = fake.answer(body)
                if path.endswith(":streamGenerateContent"):
                    raw = f"data: {json.dumps(response)}\r\n\r\n".encode()
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("content-length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                else:
                    self._json(200, response)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _function(self, body: dict) -> str | None:
        for tool in body.get("tools") or []:
            for declaration in tool.get("functionDeclarations") or []:
                if self.tool_name in (declaration.get("name") or ""):
                    return declaration["name"]
        return None

    def answer(self, body: dict) -> dict:
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        last = contents[-1] if contents else {}
        parts = [p for p in last.get("parts") or [] if isinstance(p, dict)]
        config = body.get("generationConfig") or body.get("config") or {}
        if config.get("responseMimeType") == "application/json" or config.get("responseJsonSchema"):
            # The CLI's own side questions (routing, next speaker): a plain, valid answer.
            text = json.dumps({"next_speaker": "user", "reasoning": "fake", "model_choice": "flash"})
            return self._response([{"text": text}])
        responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
        if responses:
            return self._response([{"text": "Tool said: " + json.dumps(responses[-1].get("response"))[:2000]}])
        prompt = own_words(parts)
        function = self._function(body)
        if USE_TOOL in prompt and function:
            return self._response([{"functionCall": {"name": function, "args": self.tool_args}}])
        return self._response([{"text": f"Reply to: {prompt}"}])

    def _response(self, parts: list[dict]) -> dict:
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 42, "candidatesTokenCount": 7, "totalTokenCount": 49},
                "modelVersion": "gemini-fake"}

    def model_requests(self) -> list[dict]:
        """Requests of the conversation itself (they declare tools)."""
        return [r for r in self.requests if r.get("tools")]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
