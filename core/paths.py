"""Paths as the project knows them: the one rule for everything Winni derives from a captured path
(a medallion's subsystems and entry points, file recall).

Agents send paths in every shape: Claude Code's are absolute (`/home/me/shop/src/invoice.py`),
others are relative to the working directory, Windows ones have a drive (`C:\\Users\\...`) or a
UNC share (`\\\\server\\share\\x`), a model may write `~/x` or `./src/x.py`. `project_path` reads
them all the same way: relative to the project's root when the path is inside it, else the path as
given (cleaned: forward slashes, no `.` or `..` steps, no doubled slashes); "" when it names
nothing. It never raises: a path's shape must not fail a job.

The server cannot follow symbolic links (the files are on the user's machine), so "inside" is
decided on the text: a path through a link to the project reads as a path outside it."""
from __future__ import annotations

import ntpath
import posixpath
import re
from typing import Any, Iterable

# Longer than any path a file system accepts (Linux: 4096 bytes): not a path, names nothing.
MAX_PATH_CHARS = 4096
TOP_LEVEL = "(top level)"

_DRIVE = re.compile(r"^[A-Za-z]:(?:[\\/]|$)")
# Anything before a NUL is what the operating system would read; control characters are noise.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# How a client escapes a byte that is not UTF-8 (Python's surrogateescape): PostgreSQL stores
# UTF-8 only, so it is shown as U+FFFD, as a decoder shows such a byte.
LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _text(path: Any) -> str:
    """The path as text: bytes decoded and lone surrogates (bytes a client could not decode) as
    U+FFFD, cut at a NUL, control characters dropped, spaces trimmed."""
    if isinstance(path, (bytes, bytearray)):
        path = bytes(path).decode("utf-8", "replace")
    if not isinstance(path, str):
        return ""
    path = LONE_SURROGATE.sub("\ufffd", path.split("\x00", 1)[0])
    return _CONTROL.sub("", path).strip()


_UNC = re.compile(r"^(?:\\\\|//)[^\\/]")


def _windows(path: str) -> bool:
    """A drive (`C:\\`, `C:/`), a UNC share (`\\\\server\\share`, `//server/share`) or backslashes only."""
    return bool(_DRIVE.match(path) or _UNC.match(path)) or ("\\" in path and "/" not in path)


def clean_path(path: Any) -> str:
    """The path in one spelling: forward slashes (a Windows path's backslashes included), `.`
    and `..` steps resolved on the text (`..` above the start kept for a relative path), no doubled
    or trailing slashes, a leading `./` dropped; "" for no path (empty, only `/`, over
    MAX_PATH_CHARS, not text)."""
    text = _text(path)
    if not text or len(text) > MAX_PATH_CHARS:
        return ""
    if _windows(text):
        drive, rest = ntpath.splitdrive(text)
        rest = posixpath.normpath(rest.replace("\\", "/")) if rest else ""
        if rest.startswith("//"):
            rest = "/" + rest.lstrip("/")
        # A drive or share alone (`C:\`, `\\server\share`) names no file.
        return "" if rest in ("", "/", ".") else drive.replace("\\", "/") + rest
    cleaned = posixpath.normpath(text)
    if cleaned.startswith("//"):
        cleaned = "/" + cleaned.lstrip("/")
    return "" if cleaned in ("/", ".") else cleaned


def _key(path: str) -> str:
    # Windows compares paths whatever their case.
    return path.lower() if _windows(path) else path


def _inside(path: str, root: str) -> str | None:
    """`path` relative to `root` when it is inside it ("" for the root itself), else None."""
    if not root or not path:
        return None
    key, root_key = _key(path), _key(root).rstrip("/")
    if key == root_key:
        return ""
    if root_key and key.startswith(root_key + "/"):
        return path[len(root_key) + 1:]
    return None


def windows_absolute(path: str) -> bool:
    """A Windows path from a drive or a share (`C:\\Users\\me`, `C:/Users/me`, `\\\\server\\share`)."""
    return bool(_DRIVE.match(path) or _UNC.match(path))


def _absolute(path: str) -> bool:
    return path.startswith("/") or bool(_DRIVE.match(path))


def project_path(path: Any, *, roots: Iterable[Any] = (), cwd: Any = None) -> str:
    """The path as the project knows it: relative to the deepest of `roots` (the project's git
    roots, or its folder) that holds it, else the path as given (clean_path); "" when it names
    nothing (the root itself included). A relative path is read from `cwd` when that is known
    (absolute), so `src/a.py` said in the folder `/r/app` of the root `/r` is `app/src/a.py`.
    Never raises."""
    cleaned = clean_path(path)
    if not cleaned:
        return ""
    folder = clean_path(cwd)
    if not _absolute(cleaned) and not cleaned.startswith("~") and folder and _absolute(folder):
        cleaned = clean_path(f"{folder}/{cleaned}")
    known = sorted({root for root in (clean_path(r) for r in roots) if root and _absolute(root)},
                   key=len, reverse=True)
    for root in known:
        inside = _inside(cleaned, root)
        if inside is not None:
            return inside
    if folder and _absolute(folder) and not known:
        inside = _inside(cleaned, folder)
        if inside is not None:
            return inside
    return cleaned


def outside_project(path: str) -> bool:
    """True for what project_path gives back as it was because it is not in the project: an
    absolute path, a home-relative one (`~/x`) or one leading out of it (`../x`)."""
    return _absolute(path) or path.startswith("~") or path == ".." or path.startswith("../")


def path_parts(path: Any) -> list[str]:
    """The path's folders and file, without what only says where it is anchored: a leading `/`, a
    drive (`C:`), a UNC share (`//server/share`), `~`, `.` and `..` steps."""
    cleaned = clean_path(path)
    if not cleaned:
        return []
    if _windows(cleaned):
        cleaned = ntpath.splitdrive(cleaned)[1]
    return [part for part in cleaned.split("/") if part and part not in (".", "..", "~")]


def path_area(path: Any) -> str:
    """The part of the project a path belongs to: its first folder (`src` for `src/shop/a.py`),
    TOP_LEVEL for a file at the top; "" when the path names nothing."""
    parts = path_parts(path)
    if not parts:
        return ""
    return parts[0] if len(parts) > 1 else TOP_LEVEL
