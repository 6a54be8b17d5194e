"""The MedallionLLM layer (seed 004 FR-004): `generate(scope, evidence)` and `update(existing,
new_evidence)` return a validated `schema.Content` (the sections; the service adds meta and scope).

Writers: a chat model through core.llm's clients (OpenAI-compatible or Anthropic), prompted with
the templates in templates/medallions/, and the deterministic offline `extractive` writer (the
default, medallions.extractive). Model replies that are not valid JSON for the schema get one
repair retry with the problems fed back, then a MedallionLLMError."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol, get_args

from django.conf import settings
from django.template.loader import render_to_string
from pydantic import ValidationError

from core.llm import AnthropicChat, ChatClient, LLMError, OpenAICompatibleChat, client_options
from medallions import schema

PROVIDERS = ("extractive", "openai", "anthropic")

# The provider failed (unreachable, timed out, HTTP error: core.llm) or never produced a valid
# medallion: one error for callers of the writers.
MedallionLLMError = LLMError


@dataclass
class Evidence:
    session_summary: str = ""
    transcripts: list[str] = field(default_factory=list)
    artefacts: list[str] = field(default_factory=list)
    trimmed: bool = False
    # The project's root folders as the server knows them (git roots, the session's folder): paths
    # inside them are named relative to them (core.paths.project_path).
    roots: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (self.session_summary.strip() or any(t.strip() for t in self.transcripts + self.artefacts))

    def total_chars(self) -> int:
        return len(self.session_summary) + sum(map(len, self.transcripts)) + sum(map(len, self.artefacts))

    def within(self, budget: int) -> "Evidence":
        """At most `budget` characters: the summary first, then the most recent transcript text
        (the tail matters most at a checkpoint), then artefacts in order."""
        if self.total_chars() <= budget:
            return self
        summary = self.session_summary[: budget // 4]
        left = budget - len(summary)
        transcripts: list[str] = []
        transcript_budget = left * 2 // 3 if self.artefacts else left
        for segment in reversed(self.transcripts):
            if transcript_budget <= 0:
                break
            transcripts.insert(0, segment[-transcript_budget:])
            transcript_budget -= len(transcripts[0])
        left -= sum(map(len, transcripts))
        artefacts: list[str] = []
        for artefact in self.artefacts:
            if left <= 0:
                break
            artefacts.append(artefact[:left])
            left -= len(artefacts[-1])
        return Evidence(summary, transcripts, artefacts, trimmed=True, roots=self.roots)


class MedallionLLM(Protocol):
    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    def generate(self, scope: dict[str, list[str]], evidence: Evidence) -> schema.Content: ...

    def update(self, existing: dict[str, Any], new_evidence: Evidence) -> schema.Content: ...


def content_sections(document: dict[str, Any]) -> dict[str, Any]:
    return {key: document[key] for key in ("summary", "decisions", "open_questions", "affordances")}


# --- replies from models -------------------------------------------------------------------------

FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def parse_content(reply: str) -> schema.Content:
    """A model's reply as validated sections; ValueError lists every problem with its JSON path."""
    text = FENCE.sub("", reply.strip())
    start, end = text.find("{"), text.rfind("}")
    if start < 0:
        raise ValueError("the reply contains no JSON object")
    try:
        data = json.loads(text[start : end + 1] if end > start else text[start:])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not valid JSON: {exc}") from None
    try:
        return schema.Content.model_validate(data)
    except ValidationError as exc:
        raise ValueError("; ".join(f"{path}: {msg}" for path, msg in schema.error_list(exc))) from None


def _render(name: str, **context: Any) -> str:
    return render_to_string(f"medallions/{name}", context).strip()


def system_prompt() -> str:
    return _render(
        "system.txt",
        content_schema=json.dumps(schema.json_schema(schema.Content), separators=(",", ":")),
        subsystem_statuses=", ".join(get_args(schema.SubsystemStatus)),
        decision_statuses=", ".join(get_args(schema.DecisionStatus)),
        priorities=", ".join(get_args(schema.Priority)),
    )


class ChatLLM:
    """Writes medallions with a chat model: prompts, the input budget, the repair retry."""

    client_class: type[ChatClient]

    def __init__(self, *, json_mode: str = "object", max_input_chars: int = 48_000, **client_options: Any) -> None:
        self.client = self.client_class(**client_options, purpose="medallion")
        self.json_mode = json_mode
        self.max_input_chars = max_input_chars

    @property
    def provider(self) -> str:
        return self.client.provider

    @property
    def model(self) -> str:
        return self.client.model

    @property
    def base_url(self) -> str:
        return self.client.base_url

    def generate(self, scope: dict[str, list[str]], evidence: Evidence) -> schema.Content:
        prompt = _render("generate.txt", scope=scope, evidence=evidence.within(self.max_input_chars))
        return self._complete_validated(prompt)

    def update(self, existing: dict[str, Any], new_evidence: Evidence) -> schema.Content:
        existing_json = json.dumps(content_sections(existing), indent=1, ensure_ascii=False)
        budget = max(self.max_input_chars - len(existing_json), self.max_input_chars // 4)
        prompt = _render("update.txt", existing_json=existing_json, evidence=new_evidence.within(budget))
        return self._complete_validated(prompt)

    def _json_format(self) -> dict[str, Any] | None:
        """How an OpenAI-compatible server is asked for JSON: "object" (OpenAI, Ollama, vLLM and
        llama.cpp all accept it), "schema" (structured output), "off" (servers that accept neither)."""
        if self.json_mode == "object":
            return {"type": "json_object"}
        if self.json_mode == "schema":
            return {"type": "json_schema", "json_schema": {"name": "medallion", "schema": schema.json_schema(schema.Content)}}
        return None

    def _call(self, messages: list[dict[str, str]]) -> str:
        return self.client.chat(messages, system=system_prompt(), json_format=self._json_format())

    def _complete_validated(self, prompt: str) -> schema.Content:
        messages = [{"role": "user", "content": prompt}]
        reply = self._call(messages)
        try:
            return parse_content(reply)
        except ValueError as problem:
            first_problem = str(problem)
        # One repair retry: the model sees its reply and what was wrong with it.
        messages += [
            {"role": "assistant", "content": reply[:20_000] or "(empty reply)"},
            {"role": "user", "content": _render("repair.txt", problems=first_problem.split("; ")[:20])},
        ]
        reply = self._call(messages)
        try:
            return parse_content(reply)
        except ValueError as problem:
            raise MedallionLLMError(
                f"{self.provider} returned an invalid medallion twice (after one repair retry): {problem}"
            ) from None


class OpenAICompatibleLLM(ChatLLM):
    client_class = OpenAICompatibleChat


class AnthropicLLM(ChatLLM):
    client_class = AnthropicChat


def provider_from_settings() -> MedallionLLM:
    if settings.WINNI_MEDALLION_LLM_PROVIDER == "extractive":
        from medallions.extractive import ExtractiveLLM

        return ExtractiveLLM()
    common = dict(client_options(), max_input_chars=settings.WINNI_MEDALLION_LLM_MAX_INPUT_CHARS)
    if settings.WINNI_MEDALLION_LLM_PROVIDER == "openai":
        return OpenAICompatibleLLM(json_mode=settings.WINNI_MEDALLION_LLM_JSON_MODE, **common)
    return AnthropicLLM(**common)
