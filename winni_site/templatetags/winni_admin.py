"""Template filters for the admin's own pages."""
import json
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Metadata as indented JSON (what the API returns), not Python's repr."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


@register.filter
def winni_label(value: str) -> str:
    """backlog_by_kind → Backlog by kind."""
    return str(value).replace("_", " ").capitalize()


# Messages are Markdown written by people and models: code spans, fenced blocks, lists, tables.
# Rendered with raw HTML off (markdown-it escapes any tag in the text) and markdown-it's link
# check (javascript:, vbscript:, file: and data: links are not made into links), so a message
# cannot inject markup or script into the admin. Very long messages are shown as plain text.
MARKDOWN_MAX_CHARS = 100_000
_markdown: Any = None


def _renderer() -> Any:
    global _markdown
    if _markdown is None:
        from markdown_it import MarkdownIt

        _markdown = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"])
    return _markdown


@register.filter
def markdown(value: Any) -> SafeString:
    text = str(value or "")
    if len(text) > MARKDOWN_MAX_CHARS:
        return format_html('<div class="winni-plain">{}</div>', text)
    return mark_safe(_renderer().render(text))  # noqa: S308 (raw HTML is off: see above)


@register.filter
def thousands(value: Any) -> str:
    """200000 → 200,000 (token counts)."""
    return f"{int(value or 0):,}"
