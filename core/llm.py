"""Chat clients for the configured LLM (WINNI_MEDALLION_LLM_*): an OpenAI-compatible
chat-completions client (OpenAI, Ollama /v1, vLLM, llama.cpp server) and the Anthropic Messages
API. `complete(system=, prompt=)` is one plain-text answer; `chat()` is the conversation a caller
drives itself (the medallion writer's repair retry, medallions.llm). Every failure is an LLMError
whose message says what went wrong (timed out, unreachable, HTTP status, a reply not in the
protocol's shape).

Every call goes through `chat()`, which is where the daily token budget is checked (call_begin:
a call that could pass WINNI_LLM_DAILY_TOKEN_BUDGET is not made) and where each call is accounted
(core.models.LLMCall: purpose, tokens from the provider's usage fields, estimated cost, outcome)."""
from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict

import httpx
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q, Sum
from django.utils import timezone

if TYPE_CHECKING:
    from core.models import LLMCall

DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
# Tokens are estimated from characters when a provider reports no usage (OpenAI's rule of thumb
# for English text and code: about four characters a token).
CHARS_PER_TOKEN = 4
BUDGET_LOCK = "winni:llm-daily-budget"
BUDGET_SPENT = ("the daily LLM token budget is spent: {used:,} of {budget:,} tokens used today (UTC), "
                "and this call may use up to {needed:,} (WINNI_LLM_DAILY_TOKEN_BUDGET)")


class LLMError(Exception):
    """The provider failed (unreachable, timed out, HTTP error) or answered outside its protocol."""


class LLMBudgetSpent(LLMError):
    """The call was not made: it could take today's tokens past WINNI_LLM_DAILY_TOKEN_BUDGET."""


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def today_start() -> dt.datetime:
    """The budget's day: since 00:00 UTC, like the dashboard's other "today"s."""
    return dt.datetime.combine(timezone.now().astimezone(dt.timezone.utc).date(), dt.time.min, tzinfo=dt.timezone.utc)


def tokens_used_today() -> int:
    from core.models import LLMCall

    used = LLMCall.objects.filter(started_at__gte=today_start()).aggregate(
        n=Sum(F("input_tokens") + F("output_tokens")))["n"]
    return int(used or 0)


def call_begin(*, purpose: str, provider: str, model: str, input_tokens: int, output_tokens: int) -> LLMCall:
    """The budget rule, before each call: the call is made only when today's tokens plus what it
    may use at most (its prompt's estimate and its output limit) stay within the budget; it is
    then recorded as pending with that much, so a concurrent call counts it (one lock orders the
    checks). Raises LLMBudgetSpent, recording nothing, otherwise. Must not run inside a
    transaction that outlives the call's HTTP request: the lock is held until that commits."""
    from core.models import LLMCall

    budget = settings.WINNI_LLM_DAILY_TOKEN_BUDGET
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [BUDGET_LOCK])
        used = tokens_used_today()
        if used + input_tokens + output_tokens > budget:
            raise LLMBudgetSpent(BUDGET_SPENT.format(used=used, budget=budget, needed=input_tokens + output_tokens))
        return LLMCall.objects.create(purpose=purpose, provider=provider, model=model[:200],
                                      input_tokens=input_tokens, output_tokens=output_tokens, tokens_estimated=True)


def call_end(call: LLMCall, *, input_tokens: int, output_tokens: int, estimated: bool, error: str = "") -> None:
    """What the call used, its estimated cost (WINNI_LLM_*_USD_PER_MTOK) and its outcome."""
    cost = (Decimal(input_tokens) * Decimal(str(settings.WINNI_LLM_INPUT_USD_PER_MTOK))
            + Decimal(output_tokens) * Decimal(str(settings.WINNI_LLM_OUTPUT_USD_PER_MTOK))) / Decimal(1_000_000)
    duration_ms = int((timezone.now() - call.started_at).total_seconds() * 1000)
    type(call).objects.filter(pk=call.pk).update(
        input_tokens=input_tokens, output_tokens=output_tokens, tokens_estimated=estimated,
        cost_usd=cost.quantize(Decimal("0.000001")), duration_ms=max(duration_ms, 0),
        outcome="error" if error else "ok", error=error[:2000])


class UsageToday(TypedDict):
    calls: int
    errors: int
    tokens: int
    budget: int
    cost_usd: Decimal
    by_purpose: Sequence[Mapping[str, Any]]  # purpose, calls, tokens, cost_usd, errors
    last_errors: Sequence[Mapping[str, Any]]  # started_at, purpose, error


def usage_today(*, errors: int = 5) -> UsageToday:
    """Today's calls (UTC) for the dashboard: counts, tokens of the budget, cost, per purpose, and
    the last `errors` failures with their messages."""
    from core.models import LLMCall

    today = LLMCall.objects.filter(started_at__gte=today_start())
    tokens = F("input_tokens") + F("output_tokens")
    by_purpose = list(today.values("purpose").annotate(calls=Count("pk"), tokens=Sum(tokens), cost_usd=Sum("cost_usd"),
                                                       errors=Count("pk", filter=Q(outcome="error")))
                      .order_by("purpose"))
    return {
        "calls": sum(row["calls"] for row in by_purpose),
        "errors": sum(row["errors"] for row in by_purpose),
        "tokens": sum(row["tokens"] or 0 for row in by_purpose),
        "budget": settings.WINNI_LLM_DAILY_TOKEN_BUDGET,
        "cost_usd": sum((row["cost_usd"] or Decimal(0) for row in by_purpose), Decimal(0)),
        "by_purpose": by_purpose,
        "last_errors": list(today.filter(outcome="error").values("started_at", "purpose", "error")[:errors]),
    }


class ChatClient(ABC):
    """What the HTTP providers share: the request, its timeout, error wording."""

    provider = "http"

    def __init__(self, *, base_url: str, api_key: str = "", model: str, timeout: float = 60.0,
                 max_output_tokens: int = 4096, purpose: str = "other") -> None:
        self.purpose = purpose  # what the calls are for, in their accounting (digest, medallion, …)
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
        `response_format` (JSON object or schema output); the Anthropic API has none and ignores it.
        Checked against the daily budget first (LLMBudgetSpent: no request sent), then accounted."""
        prompt_tokens = estimate_tokens(system) + sum(estimate_tokens(m["content"]) for m in messages)
        call = call_begin(purpose=self.purpose, provider=self.provider, model=self.model,
                          input_tokens=prompt_tokens, output_tokens=self.max_output_tokens)

        def failed(message: str, *, input_tokens: int = 0, output_tokens: int = 0) -> LLMError:
            call_end(call, input_tokens=input_tokens, output_tokens=output_tokens, estimated=True, error=message)
            return LLMError(message)

        try:
            response = httpx.post(self._url(), json=self._body(messages, system=system, json_format=json_format),
                                  headers=self._headers(), timeout=self.timeout)
        except httpx.TimeoutException:
            # The provider may still answer, and bill, after we gave up: the call keeps its whole share.
            raise failed(f"{self.provider} at {self.base_url} timed out after {self.timeout:g} s",
                         input_tokens=prompt_tokens, output_tokens=self.max_output_tokens) from None
        except httpx.HTTPError as exc:
            raise failed(f"{self.provider} at {self.base_url} is unreachable: {exc}") from None
        if response.status_code >= 400:
            raise failed(f"{self.provider} answered HTTP {response.status_code}: {response.text[:300]}")
        try:
            payload = response.json()
            text = self._reply_text(payload)
        except (ValueError, KeyError, IndexError, TypeError):
            raise failed(f"{self.provider} sent a response that is not its protocol's shape: {response.text[:300]}",
                         input_tokens=prompt_tokens, output_tokens=estimate_tokens(response.text)) from None
        used_in, used_out = self._usage(payload)
        call_end(call, input_tokens=prompt_tokens if used_in is None else used_in,
                 output_tokens=estimate_tokens(text) if used_out is None else used_out,
                 estimated=used_in is None or used_out is None)
        return text

    @staticmethod
    def _count(usage: Any, *keys: str) -> int | None:
        """The sum of the usage fields `keys` that are whole numbers; None when the first is missing."""
        if not isinstance(usage, dict) or not isinstance(usage.get(keys[0]), int):
            return None
        return sum(int(usage[key]) for key in keys if isinstance(usage.get(key), int) and usage[key] >= 0)

    @abstractmethod
    def _usage(self, payload: Any) -> tuple[int | None, int | None]:
        """(input, output) tokens from the reply's usage fields, None where it reports none."""

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

    def _usage(self, payload: Any) -> tuple[int | None, int | None]:
        usage = payload.get("usage")
        return self._count(usage, "prompt_tokens"), self._count(usage, "completion_tokens")


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

    def _usage(self, payload: Any) -> tuple[int | None, int | None]:
        # Prompt caching reports the cached part of the input apart: it is input all the same.
        usage = payload.get("usage")
        return (self._count(usage, "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"),
                self._count(usage, "output_tokens"))


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


def chat_client_from_settings(*, purpose: str, **options: Any) -> ChatClient | None:
    """The configured chat client for calls made for `purpose` (their accounting), or None when
    WINNI_MEDALLION_LLM_PROVIDER names no chat model (the offline `extractive` medallion writer).
    `options` override ChatClient's (e.g. max_output_tokens)."""
    client_class = CHAT_CLIENTS.get(settings.WINNI_MEDALLION_LLM_PROVIDER)
    return client_class(**{**client_options(), **options}, purpose=purpose) if client_class else None
