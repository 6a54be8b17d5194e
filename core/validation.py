"""Rules every store applies to text it keeps (messages, contexts, …), in one place."""
from typing import Any

from django.conf import settings

from winni_site.errors import InvalidInput, PayloadTooLarge


def validate_storable(value: str, *, field: str) -> str:
    """Text PostgreSQL can store (no NUL) of at most WINNI_MAX_CONTENT_BYTES of UTF-8, else
    InvalidInput / PayloadTooLarge (REST 413), instead of failing inside the INSERT."""
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain NUL (\\x00) characters", field=field)
    size = len(value.encode("utf-8"))
    if size > settings.WINNI_MAX_CONTENT_BYTES:
        raise PayloadTooLarge(
            f"{field} is {size} bytes; the limit is {settings.WINNI_MAX_CONTENT_BYTES} bytes (WINNI_MAX_CONTENT_BYTES)",
            field=field,
        )
    return value


def validate_limit(value: Any, *, field: str = "limit", maximum: int = 100) -> int:
    """A page size: an integer from 1 to `maximum` (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInput(f"{field} must be an integer from 1 to {maximum}, got {str(value)[:20]!r}", field=field)
    return value


def validate_offset(value: Any, *, field: str = "offset") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{field} must be an integer of at least 0, got {str(value)[:20]!r}", field=field)
    return value


def validate_text(value: Any, *, field: str, empty_message: str) -> str:
    """A non-blank string that passes validate_storable."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(empty_message, field=field)
    return validate_storable(value, field=field)
