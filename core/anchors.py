"""Anchors and stale marks: an item that names files of its project (a memory, a medallion's
decision or invariant, a turn, a session digest: any item Winni keys as "<kind>:<id>") keeps what
it knew of each file when it was written (core.models.Anchor); a captured tool call that changes
the file later (core.models.ProjectFile keeps each file's latest change) makes it possibly stale.

Who feeds it: an app registers, per searchable kind, how to read its rows' items and the file
changes its rows record (`register(Anchoring(...))` from its AppConfig.ready: the conversations app
reads Edit/Write/MultiEdit/NotebookEdit calls and `mv`/`rm`/`git mv`/`git rm` commands out of tool
messages; memories and medallions list their items). Once a write commits, `searchable_changed`
(core.searchable) brings the rows here; a kind that does not announce its writes calls
`anchor_on_commit`. A new kind (session digests) needs only its own `Anchoring`.

The file's identity: Winni may run on another host than the agent, so it reads the file only when
it is there (under the project's root on this machine) and the event is live (LIVE: an imported
transcript's old edit must not be hashed with today's content); the anchor then keeps the content
hash and a change that brings the file back to it is no change. Otherwise the anchor keeps the time
and session of the file's last captured change, and the mark says it is based on captured edits
only. An item that names no file has no anchor and is never marked."""
from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Iterator, TypedDict

from django.db import transaction
from django.utils import timezone

from core import paths, projects
from core.errors import InvalidInput, NotFound
from core.logs import storage_op
from core.models import Anchor, FileChange, ProjectFile

log = logging.getLogger("winni.anchors")

# Files read for their hash at most this big (a larger one is anchored on its captured edits).
HASH_MAX_BYTES = 5 * 1024 * 1024
# An event older than this is history (an imported transcript): today's content says nothing of it.
LIVE = timedelta(minutes=10)
# Characters of an item's text read for file names, and files anchored per item at most.
TEXT_CHARS = 20_000
FILES_MAX = 20
ITEM_KEY_MAX = 300

# Extensions that make a bare `name.ext` a file name rather than a dotted name (`core.paths`) or
# an abbreviation (`e.g.`); a token with a folder (`src/x`) is a path whatever its extension.
EXTENSIONS = frozenset("""
py pyi pyx ipynb js mjs cjs jsx ts tsx vue svelte go rs java kt kts scala groovy gradle c h cc cpp cxx hpp hh
cs fs swift m mm rb php pl pm lua r dart ex exs erl hrl hs ml mli clj cljs el sh bash zsh fish ps1 bat cmd
sql prisma graphql gql proto thrift tf tfvars hcl md rst txt adoc json jsonl yaml yml toml ini cfg conf env
lock xml html htm css scss sass less svg csv tsv properties plist nix mk cmake dockerfile
""".split())
BARE_NAMES = frozenset({"Dockerfile", "Makefile", "Procfile", "Gemfile", "Rakefile", "Justfile", "Jenkinsfile",
                        "Containerfile", "Vagrantfile"})
# A path: an optional start (`~`, `.`, `..`, a slash), folders, a file; a folder or file may be a
# dot-name (`.github/workflows/ci.yml`).
_PATH = re.compile(r"(?<![\w/\\.~@:-])((?:~|\.{1,2})?[/\\]?(?:\.?[\w@+-][\w@.+-]*[/\\])*\.?[\w@+-][\w@.+-]*)"
                   r"(?![\w/\\])")


@dataclass(frozen=True)
class Item:
    """One item of a row that may name files: its key, project, text and when that text was written."""

    key: str
    project_id: int | None
    text: str
    at: datetime
    roots: tuple[str, ...] = ()  # folders its paths are relative to (default: the project's roots)
    # The session that said it (a turn's), "" for items of no one session: that session's own later
    # edits carry the item out (a decision, then the Write that applies it) and do not make it stale.
    session_id: str = ""


@dataclass(frozen=True)
class Change:
    """One file change a captured tool call made (`renamed_to` for a rename)."""

    project_id: int
    path: str
    change: str
    at: datetime
    session_id: str = ""
    renamed_to: str = ""
    roots: tuple[str, ...] = ()
    folder: bool = False  # the path may be a folder (rm -r, mv of a directory): its known files change too
    commit: str = ""  # the commit that made it, when the hook saw it in the repository's history


@dataclass(frozen=True)
class Anchoring:
    """How rows of one searchable kind take part (see the module's docstring)."""

    kind: str
    load: Callable[[list[Any]], list[Any]]  # the rows of these ids (deleted ones missing)
    items: Callable[[list[Any]], list[Item]] | None = None
    changes: Callable[[list[Any]], list[Change]] | None = None


_registry: dict[str, Anchoring] = {}


def register(anchoring: Anchoring) -> None:
    _registry[anchoring.kind] = anchoring


# --- reading file names ---------------------------------------------------------------------------


def _file_tokens(text: str) -> Iterator[str]:
    """The tokens of a text that look like file paths or file names, as written."""
    for match in _PATH.finditer(text[:TEXT_CHARS]):
        token = match.group(1).rstrip(".")
        name = re.split(r"[/\\]", token)[-1]
        has_folder = bool(re.search(r"[\w@+-][/\\][\w@.+-]", token))
        extension = name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""
        dot_file = bool(re.match(r"^\.[A-Za-z][\w.-]*$", name))  # .env, .gitignore, .env.example
        if name not in BARE_NAMES and extension not in EXTENSIONS and not dot_file:
            continue
        if not has_folder and not re.match(r"^[\w@+.-]", name):
            continue
        yield token


def names_files(text: str) -> bool:
    """Whether a text names anything that looks like a file (a cheap test before named_files)."""
    return next(_file_tokens(text), None) is not None


def named_files(text: str, roots: Iterable[str] = ()) -> list[str]:
    """The project files a text names, project-relative (core.paths.project_path), in order, at
    most FILES_MAX: paths (`src/invoice.py`, `/home/me/shop/src/invoice.py`, `./src/a.ts`) and bare
    file names with a known extension (`invoice.py`). Paths outside the project, URLs and dotted
    names (`core.paths`) are not files of the project."""
    found: list[str] = []
    roots = list(roots)
    for token in _file_tokens(text):
        path = paths.project_path(token, roots=roots)
        if not path or paths.outside_project(path) or path in found:
            continue
        found.append(path)
        if len(found) >= FILES_MAX:
            break
    return found


def file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _content_hash(path: str, roots: Iterable[str]) -> str:
    """SHA-256 of the file's content when it is readable here under one of the roots, else ""."""
    for root in roots:
        if not root or not os.path.isabs(root):
            continue
        full = os.path.join(root, path)
        try:
            if os.path.isfile(full) and os.path.getsize(full) <= HASH_MAX_BYTES:
                with open(full, "rb") as handle:
                    return hashlib.sha256(handle.read()).hexdigest()
        except OSError:
            continue
    return ""


def _live(at: datetime) -> bool:
    return abs(timezone.now() - at) <= LIVE


# --- recording changes ----------------------------------------------------------------------------


def changes_record(changes: list[Change]) -> int:
    """Keep each changed file's latest change (one row per file, whatever the count of changes). A
    change older than the one kept (a transcript imported late) only counts. A folder's change
    applies to every known file under it. Returns how many file rows changed."""
    written = 0
    for change in changes:
        for one in _expanded(change):
            written += _record_one(one)
    return written


def _expanded(change: Change) -> list[Change]:
    """A change of a folder (rm -r, mv of a directory) as the change of each known file in it."""
    if not change.folder:
        return [change]
    prefix = change.path.rstrip("/") + "/"
    # The folder's files Winni knows: those captured, and those items name.
    inside = sorted({*ProjectFile.objects.filter(project_id=change.project_id, path__startswith=prefix)
                     .values_list("path", flat=True),
                     *Anchor.objects.filter(project_id=change.project_id, path__startswith=prefix)
                     .values_list("path", flat=True)})
    if not inside:
        renamed_to = change.renamed_to
        if renamed_to and ProjectFile.objects.filter(project_id=change.project_id,
                                                     path__startswith=renamed_to.rstrip("/") + "/").exists():
            # `mv a.py lib`: lib is a folder Winni knows, so the file went into it.
            renamed_to = f"{renamed_to.rstrip('/')}/{change.path.rsplit('/', 1)[-1]}"
        return [Change(**{**change.__dict__, "folder": False, "renamed_to": renamed_to})]
    renamed = change.renamed_to.rstrip("/")
    return [Change(project_id=change.project_id, path=path, change=change.change, at=change.at,
                   session_id=change.session_id, roots=change.roots,
                   renamed_to=f"{renamed}/{path[len(prefix):]}" if renamed else "") for path in inside]


def _record_one(change: Change) -> int:
    live = _live(change.at)
    with transaction.atomic():
        row, _ = ProjectFile.objects.select_for_update().get_or_create(
            project_id=change.project_id, path=change.path, defaults={"name": file_name(change.path)})
        if row.changed_at == change.at and row.change == change.change:
            return 0  # the same event announced again (a re-embedding, a scrub): already kept
        row.changes += 1
        if row.changed_at is None or change.at >= row.changed_at:
            row.change, row.changed_at, row.session_id = change.change, change.at, change.session_id[:200]
            row.renamed_to, row.commit = change.renamed_to, change.commit
            gone = change.change in (FileChange.DELETE, FileChange.RENAME)
            row.content_hash = "" if gone or not live else _content_hash(change.path, change.roots)
        row.save()
    if change.change == FileChange.RENAME and change.renamed_to:
        # The file lives on under its new name: a write of that name.
        _record_one(Change(project_id=change.project_id, path=change.renamed_to, change=FileChange.WRITE,
                           at=change.at, session_id=change.session_id, roots=change.roots, commit=change.commit))
    return 1


def files_seen(*, project_id: int, paths_seen: Iterable[str]) -> None:
    """Files a tool call read or named without changing them: known, so a bare file name in an item
    can be found under its folder."""
    for path in paths_seen:
        ProjectFile.objects.get_or_create(project_id=project_id, path=path, defaults={"name": file_name(path)})


# --- anchoring items ------------------------------------------------------------------------------


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


def items_anchor(items: list[Item]) -> int:
    """Anchor each item to the files its text names, as they are now (its text unchanged since it
    was anchored: nothing to do; a new text: anchored anew). Items of no project are not anchored
    (their paths are relative to nothing). Returns the anchors written."""
    written = 0
    unnamed: list[str] = []
    for item in items:
        if item.project_id is None or not item.key or len(item.key) > ITEM_KEY_MAX:
            continue
        if not names_files(item.text):
            unnamed.append(item.key)  # names no file (now): no anchor, and none left from before
            continue
        digest = _text_hash(item.text)
        existing = Anchor.objects.filter(item_key=item.key)
        if existing.filter(text_hash=digest).exists():
            continue
        roots = list(item.roots) or projects.project_roots([item.project_id])
        # Kept as written: a file named by the end of its path (`invoice.py`, `billing/utils.py`) is
        # matched when marks are read, against every file known by then.
        files = named_files(item.text, roots)
        known = {row.path: row for row in ProjectFile.objects.filter(project_id=item.project_id, path__in=files)}
        live = _live(item.at)
        with transaction.atomic():
            existing.delete()
            Anchor.objects.bulk_create([
                Anchor(item_key=item.key, project_id=item.project_id, path=path, text_hash=digest,
                       anchored_at=item.at, session_id=item.session_id[:200], content_hash=_content_hash(path, roots) if live else "",
                       last_change_at=known[path].changed_at if path in known else None,
                       last_change_session=known[path].session_id if path in known else "")
                for path in files])
        written += len(files)
    if unnamed:
        Anchor.objects.filter(item_key__in=unnamed).delete()
    return written


def on_changed(*, kind: str, ids: list[Any], **_: Any) -> None:
    """searchable_changed's receiver: the rows' file changes, then their items' anchors. Runs after
    the write committed; a failure here is logged, never the write's."""
    anchoring = _registry.get(kind)
    if anchoring is None or not ids:
        return
    try:
        with storage_op("anchors.sync", kind=kind, rows=len(ids)) as logged:
            rows = anchoring.load(list(ids))
            if anchoring.changes is not None:
                logged["files"] = changes_record(anchoring.changes(rows))
            if anchoring.items is not None:
                logged["anchors"] = items_anchor(anchoring.items(rows))
    except Exception:  # noqa: BLE001 - marks are an aid: the stored rows stand without them
        log.exception("anchors: could not anchor %s rows %s", kind, [str(i) for i in ids[:5]])


def anchored(kind: str) -> bool:
    """Whether rows of `kind` have files or items to anchor (an app registered it)."""
    return kind in _registry


def anchor_on_commit(kind: str, ids: Iterable[Any]) -> None:
    """For a write that does not announce itself (a memory stored with its vector in the same
    transaction): anchor its rows once the transaction commits (in the worker: core.tasks)."""
    from core.tasks import anchors_enqueue

    ids = list(ids)
    transaction.on_commit(lambda: anchors_enqueue(kind=kind, ids=ids))


# --- marks ----------------------------------------------------------------------------------------


class MarkDict(TypedDict):
    path: str
    change: str  # edit, write, delete, rename
    changed_at: str
    session_id: str
    renamed_to: str | None
    # "content": the file's content differs; "edits": captured edits only (unreadable file);
    # "commit": a commit the SessionStart hook saw in the repository (agents.commits)
    basis: str
    commit: str | None
    text: str


@dataclass(frozen=True)
class Mark:
    path: str
    change: str
    changed_at: datetime
    session_id: str
    renamed_to: str
    basis: str
    commit: str = ""

    @property
    def text(self) -> str:
        when = f"in commit {self.commit[:7]} on " if self.commit else \
            f"in session {self.session_id} on " if self.session_id else "on "
        when += self.changed_at.strftime("%Y-%m-%d %H:%M UTC")
        if self.change == FileChange.DELETE:
            said = f"{self.path} was deleted since, {when}"
        elif self.change == FileChange.RENAME:
            said = f"{self.path} was renamed to {self.renamed_to} since, {when}"
        else:
            said = f"{self.path} changed since, {when}"
        if self.basis == "edits" and self.change not in (FileChange.DELETE, FileChange.RENAME):
            # No content to compare: Winni could not read the file (a remote Winni, permissions) or
            # it did not exist yet when the item was written.
            said += " (based on captured edits only: Winni holds no copy of the file from then)"
        return said

    def as_dict(self) -> MarkDict:
        return {"path": self.path, "change": self.change, "changed_at": self.changed_at.isoformat(),
                "session_id": self.session_id, "renamed_to": self.renamed_to or None, "basis": self.basis,
                "commit": self.commit or None, "text": self.text}


def marks(keys: Iterable[str]) -> dict[str, list[Mark]]:
    """For items ("<kind>:<id>"), the files changed since each was anchored (or last confirmed),
    one mark per file (its latest change), newest first; items with none are left out."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return {}
    anchors = list(Anchor.objects.filter(item_key__in=keys))
    if not anchors:
        return {}
    # One indexed lookup by (project, file name); exact paths and path ends are told apart below.
    rows = list(ProjectFile.objects.filter(project_id__in={a.project_id for a in anchors},
                                           name__in={file_name(a.path) for a in anchors}))
    found: dict[str, list[Mark]] = {}
    for anchor in anchors:
        mine = [row for row in rows if row.project_id == anchor.project_id]
        # The file of that path; else (a path named by its end) the files whose path ends so.
        candidates = [row for row in mine if row.path == anchor.path] or [
            row for row in mine if row.path.endswith(f"/{anchor.path}")]
        dated = [(row.changed_at, row) for row in candidates if row.changed_at is not None]
        changed = max(dated, key=lambda pair: pair[0], default=(None, None))[1]
        mark = _mark(anchor, changed) if changed is not None else None
        if mark is not None:
            found.setdefault(anchor.item_key, []).append(mark)
    for key in found:
        found[key].sort(key=lambda mark: mark.changed_at, reverse=True)
    return found


def _mark(anchor: Anchor, row: ProjectFile) -> Mark | None:
    since = max(anchor.anchored_at, anchor.confirmed_at or anchor.anchored_at)
    if row.changed_at is None or row.changed_at <= since:
        return None
    if anchor.session_id and row.session_id == anchor.session_id and not row.commit:
        return None  # the item's own session changed the file after saying it: its work, not news
    content_known = bool(anchor.content_hash and row.content_hash)
    if content_known and row.change not in (FileChange.DELETE, FileChange.RENAME) \
            and anchor.content_hash == row.content_hash:
        return None  # changed and changed back: the content the item knew
    basis = "content" if content_known else "commit" if row.commit else "edits"
    return Mark(path=row.path, change=row.change, changed_at=row.changed_at, session_id=row.session_id,
                renamed_to=row.renamed_to, basis=basis, commit=row.commit)


def marks_as_dicts(keys: Iterable[str]) -> dict[str, list[MarkDict]]:
    return {key: [mark.as_dict() for mark in found] for key, found in marks(keys).items()}


def holding_first(items: list[Any], key: Callable[[Any], str], stale: dict[str, Any]) -> list[Any]:
    """`items` in order, except that the possibly stale ones come after every one that holds."""
    return [item for item in items if key(item) not in stale] + [item for item in items if key(item) in stale]


# --- confirming and superseding --------------------------------------------------------------------

ITEM_INVALID = "item must be an item key '<kind>:<id>' (as recall and automatic recall name items), got {value!r}"
NO_ANCHORS = "item: {key} names no file Winni knows of, so it is never marked possibly stale"


def parse_item_key(value: Any, *, field: str = "item") -> str:
    if not isinstance(value, str) or ":" not in value.strip() or len(value) > ITEM_KEY_MAX \
            or not all(value.strip().split(":", 1)):
        raise InvalidInput(f"{field}: " + ITEM_INVALID.format(value=str(value)[:80]), field=field)
    return value.strip()


def item_confirm(*, item: Any, actor: str = "") -> dict[str, Any]:
    """The item still holds: its marks clear until a file it names changes again."""
    key = parse_item_key(item)
    anchors = Anchor.objects.filter(item_key=key)
    if not projects.scope_queryset(anchors, None).exists():
        raise NotFound(NO_ANCHORS.format(key=key), field="item")
    cleared = marks([key]).get(key, [])
    now = timezone.now()
    with storage_op("anchors.confirm", item=key[:80]):
        projects.scope_queryset(anchors, None).update(confirmed_at=now, confirmed_by=actor[:200])
    return {"item": key, "confirmed_at": now.isoformat(), "files": sorted(anchors.values_list("path", flat=True)),
            "cleared": [mark.text for mark in cleared]}


@dataclass
class Supersession:
    """How a kind's item is superseded (its own store's rule: a memory by a new memory, a decision
    by a status), registered by its app."""

    kind: str
    supersede: Callable[..., dict[str, Any]]  # (item_id=, replacement=, actor=) → what was done
    needs_replacement: bool = False


_supersessions: dict[str, Supersession] = {}


def register_supersession(supersession: Supersession) -> None:
    _supersessions[supersession.kind] = supersession


def item_supersede(*, item: Any, replacement: Any = None, actor: str = "") -> dict[str, Any]:
    """The item no longer holds: its own store supersedes it (with `replacement`, the text that
    holds now, where the store keeps one). A kind without a rule for it (a turn: what was said
    stays said) is refused naming the field."""
    key = parse_item_key(item)
    kind, item_id = key.split(":", 1)
    rule = _supersessions.get(kind)
    if rule is None:
        known = ", ".join(sorted(_supersessions)) or "none"
        raise InvalidInput(f"item: a {kind} cannot be superseded (kinds that can: {known}); confirm it or "
                           "store what holds now", field="item")
    if replacement is not None and (not isinstance(replacement, str) or not replacement.strip()):
        raise InvalidInput("replacement must be non-empty text (what holds now)", field="replacement")
    if rule.needs_replacement and replacement is None:
        raise InvalidInput(f"replacement is required to supersede a {kind}: the text that holds now",
                           field="replacement")
    with storage_op("anchors.supersede", item=key[:80]):
        done = rule.supersede(item_id=item_id, replacement=replacement, actor=actor)
    return {"item": key, **done}
