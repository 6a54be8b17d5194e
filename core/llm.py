"""Chat clients for the configured LLM (WINNI_MEDALLION_LLM_*): an OpenAI-compatible
chat-completions client (OpenAI, Ollama /v1, vLLM, llama.cpp server) and the Anthropic Messages
API. `complete(system=, prompt=)` is one plain-text answer; `chat()` is the conversation a caller
drives itself (the medallion writer's repair retry, medallions.llm). Every failure is an LLMError
whose message says what went wrong (timed out, unreachable, HTTP status, a reply not in the
protocol's shape)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import httpx
from django.conf import settings

DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}


class LLMError(Exception):
    """The provider failed (unreachable, timed out, HTTP error) or answered outside its protocol."""


class ChatClient(ABC):
    """What the HTTP providers share: the request, its timeout, error wording."""

    provider = "http"

    def __init__(self, *, base_url: str, api_key: str = "", model: str, timeout: float = 60.0,
                 max_output_tokens: int = 4096) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.timeout = timeout
        self.max_output_tokens = max_output_tokens

    def complete(self, *, system: str, prompt: str) -> str:
        """One plain-text answer to `prompt` under the `system` prompt."""
        return self.chat([{"role": "user", "content": prompt}], system=system)

    def chat(self, messages: list[dict[str, str]], *, system: str, json_format: dict[str, Any] | None = None) -> str:
        """The reply to a conversation (user and assistant turns). `json_format` is an OpenAI
        `response_format` (JSON object or schema output); the Anthropic API has none and ignores it."""
        try:
            response = httpx.post(self._url(), json=self._body(messages, system=system, json_format=json_format),
                                  headers=self._headers(), timeout=self.timeout)
        except httpx.TimeoutException:
            raise LLMError(f"{self.provider} at {self.base_url} timed out after {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise LLMError(f"{self.provider} at {self.base_url} is unreachable: {exc}") from None
        if response.status_code >= 400:
            raise LLMError(f"{self.provider} answered HTTP {response.status_code}: {response.text[:300]}")
        try:
            return self._reply_text(response.json())
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(
                f"{self.provider} sent a response that is not its protocol's shape: {response.text[:300]}"
            ) from None

    @abstractmethod
    def _url(self) -> str:
        """Each provider's protocol detail."""

    @abstractmethod
    def _headers(self) -> dict[str, str]:
        """Each provider's protocol detail."""

    @abstractmethod
    def _body(self, messages: list[dict[str, str]], *, system: str, json_format: dict[str, Any] | None) -> dict[str, Any]:
        """Each provider's protocol detail."""

    @abstractmethod
    def _reply_text(self, payload: Any) -> str:
        """Each provider's protocol detail."""


class OpenAICompatibleChat(ChatClient):
    """POST {base_url}/chat/completions."""

    provider = "openai"

    def _url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _body(self, messages: list[dict[str, str]], *, system: str, json_format: dict[str, Any] | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, *messages],
            "temperature": 0,
            "max_tokens": self.max_output_tokens,
        }
        if json_format is not None:
            body["response_format"] = json_format
        return body

    def _reply_text(self, payload: Any) -> str:
        return str(payload["choices"][0]["message"]["content"] or "")


class AnthropicChat(ChatClient):
    """POST {base_url}/v1/messages (Anthropic Messages API)."""

    provider = "anthropic"
    API_VERSION = "2023-06-01"

    def _url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key, "anthropic-version": self.API_VERSION}

    def _body(self, messages: list[dict[str, str]], *, system: str, json_format: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "model": self.model,
            "system": system,
            "messages": messages,
            "max_tokens": self.max_output_tokens,
            "temperature": 0,
        }

    def _reply_text(self, payload: Any) -> str:
        return "".join(block["text"] for block in payload["content"] if block.get("type") == "text")


CHAT_CLIENTS: dict[str, type[ChatClient]] = {"openai": OpenAICompatibleChat, "anthropic": AnthropicChat}


def client_options() -> dict[str, Any]:
    """The configured provider's connection (WINNI_MEDALLION_LLM_BASE_URL, _API_KEY, _MODEL,
    _TIMEOUT_SECONDS), as keyword arguments of a ChatClient."""
    name = settings.WINNI_MEDALLION_LLM_PROVIDER
    return {
        "base_url": settings.WINNI_MEDALLION_LLM_BASE_URL or DEFAULT_BASE_URLS[name],
        "api_key": settings.WINNI_MEDALLION_LLM_API_KEY,
        "model": settings.WINNI_MEDALLION_LLM_MODEL,
        "timeout": settings.WINNI_MEDALLION_LLM_TIMEOUT_SECONDS,
    }


def chat_client_from_settings() -> ChatClient | None:
    """The configured chat client, or None when WINNI_MEDALLION_LLM_PROVIDER names no chat model
    (the offline `extractive` medallion writer)."""
    client_class = CHAT_CLIENTS.get(settings.WINNI_MEDALLION_LLM_PROVIDER)
    return client_class(**client_options()) if client_class else None
