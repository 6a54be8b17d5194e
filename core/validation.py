"""The input rules every store applies, one function per shape: stored text, page sizes, UUIDs,
timestamps, date ranges, metadata and search queries. Each raises InvalidInput (or
PayloadTooLarge) naming the field and the rule."""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Literal, overload

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from core.errors import InvalidInput, PayloadTooLarge

METADATA_NOT_OBJECT = "must be a JSON object or null"
QUERY_EMPTY = "must not be empty or whitespace"
QUERY_MAX_CHARS = 1000
# Any other query (recall, search_memory, the answer cache): the embedding model reads about 256
# tokens (≈ 1,000 characters) of it anyway, and echoing a megabyte back helps nobody.
QUERY_TEXT_MAX_CHARS = 10_000
QUERY_TOO_LONG = "{field} is {size} characters; a search query may have at most {limit}"

# The words for a value of the wrong shape at the edge, one set for both interfaces: REST's
# serializers (core.rest) and MCP's argument check (core.mcp) say "content: must be a string, got
# a number" alike. Each is the part after the "name: " label.
NOT_A = "must be {expected}, got {got}"
REQUIRED = "is required"
UNKNOWN_FIELD = "is not a field of this request (fields: {known})"
AT_MOST = "must be at most {limit}, got {got}"
AT_LEAST = "must be at least {limit}, got {got}"
CHARS_AT_MOST = "must be at most {limit} characters, got {got}"
CHARS_AT_LEAST = "must be at least {limit} characters, got {got}"
ITEMS_AT_MOST = "must hold at most {limit} items, got {got}"
NOT_ONE_OF = "must be one of {choices}, got {got}"


def json_type(value: Any) -> str:
    """What a parsed JSON value is, in words ("a number", "an array")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def choice_list(choices: Any) -> str:
    """'a', 'b' or 'c'."""
    shown = [repr(choice) for choice in choices]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def shown_value(value: Any) -> str:
    """A refused value as an error repeats it: short, and quoted when it is text."""
    return repr(value[:40] if isinstance(value, str) else value)


def validate_storable(value: str, *, field: str) -> str:
    """Text PostgreSQL can store (no NUL, no lone surrogate) of at most WINNI_MAX_CONTENT_BYTES of UTF-8, else
    InvalidInput / PayloadTooLarge (REST 413), instead of failing inside the INSERT."""
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain NUL (\\x00) characters", field=field)
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        # A lone surrogate: how a client escapes a byte that is not UTF-8 (a file name's).
        raise InvalidInput(f"{field} must be Unicode text; it holds a lone surrogate (a byte that is not UTF-8)",
                           field=field) from None
    if size > settings.WINNI_MAX_CONTENT_BYTES:
        raise PayloadTooLarge(
            f"{field} is {size} bytes; the limit is {settings.WINNI_MAX_CONTENT_BYTES} bytes (WINNI_MAX_CONTENT_BYTES)",
            field=field,
        )
    return value


def validate_int_range(value: Any, *, field: str, low: int, high: int) -> int:
    """An integer from `low` to `high` (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}, got {str(value)[:20]!r}", field=field)
    return value


def validate_limit(value: Any, *, field: str = "limit", maximum: int = 100) -> int:
    """A page size: an integer from 1 to `maximum` (not a bool)."""
    return validate_int_range(value, field=field, low=1, high=maximum)


def validate_offset(value: Any, *, field: str = "offset") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{field} must be an integer of at least 0, got {str(value)[:20]!r}", field=field)
    return value


def validate_text(value: Any, *, field: str, empty_message: str) -> str:
    """A non-blank string that passes validate_storable."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(empty_message, field=field)
    return validate_storable(value, field=field)


@overload
def parse_uuid(value: Any, *, field: str, optional: Literal[False] = False) -> uuid.UUID: ...
@overload
def parse_uuid(value: Any, *, field: str, optional: bool) -> uuid.UUID | None: ...
def parse_uuid(value: Any, *, field: str, optional: bool = False) -> uuid.UUID | None:
    """A UUID (or its text); with `optional`, None and "" give None."""
    if optional and (value is None or value == ""):
        return None
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except (ValueError, AttributeError, TypeError):
        raise InvalidInput(f"{field} must be a UUID, got {str(value)[:80]!r}", field=field) from None


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any("\x00" in str(key) or _has_nul(inner) for key, inner in value.items())
    if isinstance(value, list):
        return any(_has_nul(inner) for inner in value)
    return False


def validate_metadata(value: Any, *, field: str = "metadata") -> dict[str, Any] | None:
    """A JSON object or None; PostgreSQL's jsonb keeps no NUL character (in a key or a string)."""
    if value is not None and not isinstance(value, dict):
        raise InvalidInput(f"{field}: {METADATA_NOT_OBJECT}", field=field)
    if value and _has_nul(value):
        raise InvalidInput(f"{field} must not contain NUL (\\u0000) characters", field=field)
    return value


def parse_timestamp(value: Any, *, field: str) -> dt.datetime | None:
    """ISO 8601 (a naive value is taken as UTC); None stays None."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        parsed: dt.datetime | None = value
    else:
        try:
            parsed = parse_datetime(str(value))
        except ValueError:
            parsed = None
    if parsed is None:
        raise InvalidInput(f"{field} must be an ISO 8601 date-time, got {str(value)[:60]!r}", field=field)
    if timezone.is_naive(parsed):
        return timezone.make_aware(parsed, dt.timezone.utc)
    # In UTC: PostgreSQL takes offsets up to ±15:59 only, Python up to ±23:59.
    try:
        return parsed.astimezone(dt.timezone.utc)
    except OverflowError:
        raise InvalidInput(f"{field} is out of range in UTC, got {str(value)[:60]!r}", field=field) from None


def _date_bound(value: Any, *, field: str, end: bool) -> dt.datetime | None:
    """One bound as an instant; an end bound comes back exclusive (just past what it includes)."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and len(value.strip()) == 10:
        try:
            day = dt.date.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInput(f"{field} must be an ISO 8601 date or date-time, got {value[:60]!r}", field=field) from None
        midnight = dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc)
        if not end:
            return midnight
        # A date alone means the whole day: an end date includes all of it.
        return _later(midnight, dt.timedelta(days=1))
    try:
        parsed = parse_timestamp(value, field=field)
    except InvalidInput:
        raise InvalidInput(f"{field} must be an ISO 8601 date or date-time, got {str(value)[:60]!r}", field=field) from None
    # A date-time end is inclusive: move it just past the instant so `< end` keeps it.
    return _later(parsed, dt.timedelta(microseconds=1)) if end and parsed else parsed


def _later(instant: dt.datetime, step: dt.timedelta) -> dt.datetime | None:
    """An exclusive end bound; none at all past the last representable instant."""
    try:
        return instant + step
    except OverflowError:
        return None


def parse_date_range(start_date: Any, end_date: Any) -> tuple[dt.datetime | None, dt.datetime | None]:
    """(start inclusive, end exclusive) from ISO 8601 dates or date-times, the one date rule of
    every tool and endpoint that filters by date (dewey_search, the Fiedler queries, winni_recall,
    search_memory): a date alone means that whole day (UTC), so a start date is its midnight and an
    end date includes the day; a date-time is the instant (a naive one is UTC), inclusive at both
    ends. A start after the end is an empty range (it finds nothing), not an error: no schema can
    say "after" (issue #24: what the schema allows, the code accepts)."""
    start = _date_bound(start_date, field="start_date", end=False)
    end = _date_bound(end_date, field="end_date", end=True)
    return start, end


RECENCY_MAX_DAYS = 36500.0


def parse_as_of(value: Any, *, field: str = "as_of") -> dt.datetime:
    """The moment a search's time words are read from ("yesterday" is the day before it): an ISO 8601
    date-time (a naive one is UTC) or a date (its midnight, UTC); None or "" is now."""
    if value is None or value == "":
        return timezone.now()
    if isinstance(value, str) and len(value.strip()) == 10:
        try:
            return dt.datetime.combine(dt.date.fromisoformat(value.strip()), dt.time(), tzinfo=dt.timezone.utc)
        except ValueError:
            pass
    try:
        parsed = parse_timestamp(value, field=field)
    except InvalidInput:
        parsed = None
    if parsed is None:
        raise InvalidInput(f"{field} must be an ISO 8601 date or date-time, got {str(value)[:60]!r}", field=field)
    return parsed


def validate_recency(value: Any, *, field: str = "recency") -> float | None:
    """A ranking half-life in days (newer rows weigh more: a row that old counts half), or None (off)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= RECENCY_MAX_DAYS:
        raise InvalidInput(f"{field} must be a half-life in days greater than 0 (at most {RECENCY_MAX_DAYS:g}), "
                           f"got {str(value)[:20]!r}", field=field)
    return float(value)


def validate_query(value: Any, *, field: str = "query", words: bool = False) -> str:
    """A search query, trimmed: a non-blank string PostgreSQL can store.

    Without `words` it is at most QUERY_TEXT_MAX_CHARS (PayloadTooLarge: REST 413, an MCP tool
    error). With `words` (full-text search in web-search syntax) it must be at most QUERY_MAX_CHARS.
    A query of stop words or punctuation only ("the", "?!") is valid and finds nothing (full-text
    search has nothing to look for); a blank one is refused."""
    if not words:
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(f"{field}: {QUERY_EMPTY}", field=field)
        if len(value) > QUERY_TEXT_MAX_CHARS:
            raise PayloadTooLarge(QUERY_TOO_LONG.format(field=field, size=len(value), limit=QUERY_TEXT_MAX_CHARS),
                                  field=field)
        return validate_storable(value, field=field).strip()
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{field}: {QUERY_EMPTY}", field=field)
    if len(value) > QUERY_MAX_CHARS:
        raise InvalidInput(f"{field} must be at most {QUERY_MAX_CHARS} characters", field=field)
    validate_storable(value, field=field)
    return value.strip()
