"""Tiny environment readers that fail loudly, naming the variable (HC's envbool)."""
import os

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    _check_range(name, value, minimum, maximum)
    return value


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    _check_range(name, value, minimum, maximum)
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_globs(name: str) -> list[str]:
    """Comma-separated shell globs (fnmatch: `*`, `?`, `[seq]`); an empty item or a `[` without
    its `]` stops start-up naming the glob (fnmatch would silently match it literally)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return []
    globs = []
    for item in raw.split(","):
        glob = item.strip()
        if not glob:
            raise ImproperlyConfigured(f"{name} has an empty glob in {raw!r} (comma-separated globs)")
        error = _bracket_error(glob)
        if error:
            raise ImproperlyConfigured(f"{name}: {glob!r} is not a valid glob ({error})")
        globs.append(glob)
    return globs


def _bracket_error(glob: str) -> str:
    """Why `glob`'s brackets are not a glob's, or ""."""
    index = 0
    while index < len(glob):
        if glob[index] == "[":
            # As in fnmatch: a `]` right after `[` or `[!` belongs to the set.
            end = index + 1
            if end < len(glob) and glob[end] == "!":
                end += 1
            if end < len(glob) and glob[end] == "]":
                end += 1
            close = glob.find("]", end)
            if close < 0:
                return f"'[' at position {index + 1} is never closed by ']'"
            index = close
        index += 1
    return ""


def _check_range(name: str, value: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {value}")
