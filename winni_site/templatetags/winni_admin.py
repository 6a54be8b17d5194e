"""Template filters for the admin's own pages."""
import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Metadata as indented JSON (what the API returns), not Python's repr."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


@register.filter
def winni_label(value: str) -> str:
    """backlog_by_kind → Backlog by kind."""
    return str(value).replace("_", " ").capitalize()
