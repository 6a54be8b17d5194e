"""Redaction at every entry point: the one function each service calls on free text before it
writes it (`redact`), and the tally that lets an interface say how many secrets one request had
redacted.

`redact(text)` runs `core.scrub.scrub` with WINNI_SCRUB: `<private>…</private>` spans become
`[private]` always, recognised secrets become `[REDACTED:<type>]` unless WINNI_SCRUB is off. It
returns a `Redacted` string (a plain `str` subclass), so a text that already went through (capture
redacts before it cuts a long tool output to its limit, then the conversations service is handed
the result) is not scanned a second time. Services store `str(value)`.

The tally: `counting()` (the MCP tool wrapper and the REST middleware open one per call) collects
the counts of every `redact` made during the call; the interface adds them to a JSON object
answer as `redacted` (secrets replaced), `redacted_types` (per type) and `private_spans` when
the call redacted anything (an answer without them had nothing redacted). One log
line per text that had something redacted: counts and the field, never the text."""
from __future__ import annotations

import logging
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, TypedDict, TypeVar, overload

from django.conf import settings
from rest_framework.renderers import JSONRenderer

from core.scrub import redaction, scrub, secret_named_value

log = logging.getLogger("winni.redaction")


class Redacted(str):
    """Text `redact` has produced: redacting it again returns it unchanged, at no cost."""

    __slots__ = ()


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=dict)
    private: int = 0

    @property
    def redacted(self) -> int:
        return sum(self.counts.values())

    def add(self, counts: dict[str, int], private: int) -> None:
        self.private += private
        for kind, n in counts.items():
            self.counts[kind] = self.counts.get(kind, 0) + n

    def fields(self) -> dict[str, Any]:
        """What an answer adds: `redacted`, `redacted_types`, `private_spans`."""
        return {"redacted": self.redacted, "redacted_types": dict(sorted(self.counts.items())),
                "private_spans": self.private}


class RedactionCounts(TypedDict, total=False):
    """The fields a write's answer gains when the call redacted text (see `Tally.fields`):
    output shapes of writes derive from it, so MCP's structured content keeps them."""

    redacted: int
    redacted_types: dict[str, int]
    private_spans: int


_tally: ContextVar[Tally | None] = ContextVar("winni_redaction_tally", default=None)


@contextmanager
def counting() -> Iterator[Tally]:
    """Collect the counts of every `redact` until the block ends (nested: the inner block counts
    into its own tally and into the outer one)."""
    outer = _tally.get()
    tally = Tally()
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)
        if outer is not None:
            outer.add(tally.counts, tally.private)


def add_counts(answer: Any, tally: Tally) -> Any:
    """`answer` with the tally's fields when it is a JSON object and the call redacted anything
    (an answer without them had nothing redacted)."""
    if (tally.redacted or tally.private) and isinstance(answer, dict) and "redacted" not in answer:
        return {**answer, **tally.fields()}
    return answer


def redact(text: Any, *, field: str = "text") -> Any:
    """`text` with `<private>` spans and (WINNI_SCRUB) secrets replaced, counted in the current
    tally; anything that is not a string is returned as it is, for the caller's validation."""
    if not isinstance(text, str) or type(text) is Redacted:
        return text
    result = scrub(text, enabled=settings.WINNI_SCRUB)
    tally = _tally.get()
    if tally is not None:
        tally.add(result.counts, result.private)
    if result.counts or result.private:
        log.info("redacted", extra={"fields": {"field": field, "redacted": result.redacted,
                                              "types": result.counts, "private_spans": result.private}})
    return Redacted(result.text)


def redact_optional(text: Any, *, field: str = "text") -> Any:
    return None if text is None else redact(text, field=field)


def redact_json(value: Any, *, field: str = "metadata", named: bool = False, key: str | None = None) -> Any:
    """Every string inside a JSON value, each in its own raw form (with real line breaks: what
    the detector reads best, where the JSON text would have `\\n` run lines together). With
    `named` (a tool's input and output), also the string under a secret-named key that looks like
    a secret ({"password": "…"}: the context a string alone lacks); not for Winni's own metadata,
    whose keys (`capture_key`) are ours. Keys are names: scrubbed, not judged."""
    if isinstance(value, str):
        text = str(redact(value, field=field))
        if named and key is not None and text == value and secret_named_value(key, value):
            tally = _tally.get()
            if tally is not None:
                tally.add({"named-secret": 1}, 0)
            log.info("redacted", extra={"fields": {"field": field, "redacted": 1, "types": {"named-secret": 1},
                                                  "private_spans": 0}})
            return redaction("named-secret")
        return text
    if isinstance(value, dict):
        return {str(redact(name, field=field)) if isinstance(name, str) else name:
                redact_json(item, field=field, named=named, key=name if isinstance(name, str) else None)
                for name, item in value.items()}
    if isinstance(value, list):
        return [redact_json(item, field=field, named=named, key=key) for item in value]
    return value


_T = TypeVar("_T")


@overload
def plain(text: str) -> str: ...
@overload
def plain(text: _T) -> _T: ...
def plain(text: Any) -> Any:
    """A `Redacted` as the plain `str` the database drivers expect."""
    return str(text) if type(text) is Redacted else text


class RedactionCountMiddleware:
    """Counts the redactions of one REST request; the JSON renderer adds them to the answer."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        with counting() as tally:
            request.winni_redaction = tally
            return self.get_response(request)


class RedactionCountRenderer(JSONRenderer):
    """DRF's JSON renderer, adding the request's redaction counts to a successful JSON object."""

    def render(self, data: Any, accepted_media_type: Any = None, renderer_context: Any = None) -> bytes:
        context = renderer_context or {}
        tally = getattr(context.get("request"), "winni_redaction", None)
        response = context.get("response")
        if tally is not None and (response is None or response.status_code < 400):
            data = add_counts(data, tally)
        return super().render(data, accepted_media_type, renderer_context)
