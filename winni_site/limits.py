"""The content size limit every store applies (WINNI_MAX_CONTENT_BYTES, SPEC "Defaults that matter")."""
from django.conf import settings

from winni_site.errors import PayloadTooLarge


def check_content_size(value: str, *, field: str) -> str:
    """`value` unchanged, or PayloadTooLarge naming the field, its size and the limit."""
    size = len(value.encode("utf-8"))
    if size > settings.WINNI_MAX_CONTENT_BYTES:
        raise PayloadTooLarge(
            f"{field} is {size} bytes; the limit is {settings.WINNI_MAX_CONTENT_BYTES} bytes (WINNI_MAX_CONTENT_BYTES)",
            field=field,
        )
    return value
