"""The settings file: `winni.env` beside the `winni` script (or the file WINNI_ENV_FILE names),
read at start by every process (Django settings, `./winni service`), so a shell, the user service
and the children of `./winni run` all run with the same settings.

Format: one `KEY=VALUE` per line; `#` starts a comment line (or, after a space, a comment at the
end of an unquoted value); an optional `export ` prefix; values in '…' are taken as they are,
values in "…" understand \\" \\\\ \\n \\t. Real environment variables win over the file.

Typos fail loudly: a malformed line, a key set twice, or a WINNI_* / LIBRARIAN_* key that no
settings module reads stops start-up naming the file and the line. A bad value (WINNI_PORT=abc) is
refused by the settings themselves; `explain()` adds where the value came from.

Django-free on purpose: `./winni service` reads it without starting the embedded servers."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

CHECKOUT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = CHECKOUT / "winni.env"
CHECKED_PREFIXES = ("WINNI_", "LIBRARIAN_")
# WINNI_* variables that are read outside the settings modules (so not found by `known_settings`):
# they are not Winni server settings and have no business in the file.
NOT_IN_FILE = {
    "WINNI_ENV_FILE": "it names the settings file itself",
    "WINNI_VENV": "the `winni` script reads it before any settings are loaded",
    "WINNI_TEST_WORKERS": "only `./winni test` reads it, from the environment",
}
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SETTINGS_READ = re.compile(r'env_(?:str|bool|int|float|list)\(\s*"([A-Z0-9_]+)"')
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "$": "$"}


@dataclass(frozen=True)
class Entry:
    key: str
    value: str
    path: Path
    line: int

    @property
    def where(self) -> str:
        return f"{self.path}, line {self.line}"


# Keys this process took from the file (the environment did not already set them).
applied: dict[str, Entry] = {}


def settings_file() -> Path | None:
    """WINNI_ENV_FILE (which must exist), else ./winni.env when there is one."""
    named = os.environ.get("WINNI_ENV_FILE")
    if named:
        path = Path(named).expanduser()
        if not path.exists():
            raise ImproperlyConfigured(f"WINNI_ENV_FILE names {path}, which does not exist")
        return path.resolve()
    return DEFAULT_FILE if DEFAULT_FILE.exists() else None


def parse(text: str, path: Path) -> list[Entry]:
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, rest = line.partition("=")
        key = key.strip()
        if not sep or not _KEY.fullmatch(key):
            raise ImproperlyConfigured(f"{path}, line {number}: expected KEY=VALUE, got {raw.strip()!r}")
        if key in seen:
            raise ImproperlyConfigured(f"{path}, line {number}: {key} is already set on line {seen[key]}")
        seen[key] = number
        entries.append(Entry(key, _value(rest.strip(), f"{path}, line {number}"), path, number))
    return entries


def _value(rest: str, where: str) -> str:
    if rest[:1] in ("'", '"'):
        quote = rest[0]
        end = _closing_quote(rest, quote)
        if end is None:
            raise ImproperlyConfigured(f"{where}: the value has no closing {quote}")
        trailing = rest[end + 1:].strip()
        if trailing and not trailing.startswith("#"):
            raise ImproperlyConfigured(f"{where}: unexpected text after the quoted value: {trailing!r}")
        inner = rest[1:end]
        if quote == "'":
            return inner
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), inner)
    return re.split(r"\s+#", rest, maxsplit=1)[0].strip()


def _closing_quote(rest: str, quote: str) -> int | None:
    index = 1
    while index < len(rest):
        if rest[index] == "\\" and quote == '"':
            index += 2
            continue
        if rest[index] == quote:
            return index
        index += 1
    return None


def known_settings() -> set[str]:
    """Every variable a settings module reads (its env_*("NAME", …) calls): the one list of
    settings, also used by the tests that check README and docker-compose.yml."""
    names: set[str] = set()
    for module in (CHECKOUT / "winni_site" / "settings").glob("*.py"):
        names |= set(_SETTINGS_READ.findall(module.read_text()))
    return names


def read(path: Path) -> list[Entry]:
    """The file's entries, refusing unknown WINNI_* / LIBRARIAN_* keys (typos)."""
    entries = parse(path.read_text(encoding="utf-8"), path)
    known = known_settings()
    unknown = [entry for entry in entries if entry.key.startswith(CHECKED_PREFIXES) and entry.key not in known]
    if unknown:
        details = "; ".join(
            f"{entry.key} (line {entry.line}{': ' + NOT_IN_FILE[entry.key] if entry.key in NOT_IN_FILE else ''})"
            for entry in unknown)
        raise ImproperlyConfigured(f"{path}: unknown setting(s) {details}. The settings are listed in README.md, "
                                   "\"Settings\"; a misspelt name would be ignored, so it is refused")
    return entries


def load() -> Path | None:
    """Put the file's settings into os.environ where the environment does not set them; returns
    the file read (None: no file). Children started from this process inherit the result."""
    path = settings_file()
    if path is None:
        return None
    for entry in read(path):
        if entry.key not in os.environ:
            os.environ[entry.key] = entry.value
            applied[entry.key] = entry
    return path


def explain(message: str) -> str:
    """`message` (a settings error) with the file and line of the first variable it names that
    came from the settings file."""
    named = [entry for key, entry in applied.items() if re.search(rf"\b{re.escape(key)}\b", message)]
    if not named:
        return message
    first = min(named, key=lambda entry: message.find(entry.key))
    return f"{message} (set in {first.where})"
