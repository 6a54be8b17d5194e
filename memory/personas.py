"""Persona prompts (seed 003's "venom_identity", generalised): named files from WINNI_PERSONA_FILES;
an unknown or missing name falls back to the default (the first entry)."""
from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def persona_files() -> dict[str, Path]:
    """Ordered name → path; the first entry is the default."""
    files: dict[str, Path] = {}
    for entry in settings.WINNI_PERSONA_FILES:
        name, sep, path = entry.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ImproperlyConfigured(f"WINNI_PERSONA_FILES entries must look like name=path, got {entry!r}")
        files[name.strip()] = Path(path.strip()).expanduser()
    if not files:
        raise ImproperlyConfigured("WINNI_PERSONA_FILES must name at least one file")
    return files


def default_persona() -> str:
    return next(iter(persona_files()))


def persona_text(name: str | None = None) -> tuple[str, str]:
    """(name actually used, text). Unknown name, or a file that cannot be read → the default."""
    files = persona_files()
    default = default_persona()
    chosen = name if name in files else default
    try:
        return chosen, files[chosen].read_text(encoding="utf-8")
    except OSError:
        if chosen == default:
            raise
        return default, files[default].read_text(encoding="utf-8")
