"""New commits seen at SessionStart (issue #48): the hook, on the user's machine, reports the
repository's HEAD; when it is not the commit Winni last saw for the project, the hook reports the
files changed since (`git diff --name-status -M <seen> HEAD`, bounded, with the commit that last
changed each), and their anchored items become possibly stale ("src/x.py changed since, in commit
abc1234 on …"; core.anchors keeps one row per file, so one mark per file: its latest change).
A remote Winni cannot read the repository: what it knows of commits comes from the hook.

The commit Winni last saw, and when, are the project's settings ("commit_seen", "commit_seen_at").
The first report only sets them: nothing before it is known to have changed since an item."""
from __future__ import annotations

import re
from datetime import datetime
from typing import Any, TypedDict

from django.db import transaction
from django.utils import timezone

from core import anchors, paths, projects
from core.errors import InvalidInput, NotFound
from core.logs import storage_op
from core.models import FileChange, Project, ProjectFile
from core.validation import parse_timestamp

# Files one report carries at most (the hook stops there: a history too long to replay file by
# file is marked by its first FILES_MAX files, the ones git lists first).
FILES_MAX = 1000
PATH_MAX = 4096
_SHA = re.compile(r"^[0-9a-f]{4,64}$")
# git's status letters → the change core.anchors records (a copy's new file is a write).
STATUS = {"A": FileChange.WRITE, "C": FileChange.WRITE, "M": FileChange.EDIT, "T": FileChange.EDIT,
          "D": FileChange.DELETE, "R": FileChange.RENAME}
SEEN_KEY, SEEN_AT_KEY = "commit_seen", "commit_seen_at"

SHA_INVALID = "{field} must be a commit hash (4 to 64 hexadecimal digits), got {value!r}"
FILES_INVALID = f"files must be a list of at most {FILES_MAX} changed files"
FILE_INVALID = ("files[{index}] must be an object with path (a file of the repository), status (one of "
                + ", ".join(STATUS) + "), commit and committed_at (ISO 8601); renamed_to with status R")
FILES_WITHOUT_SINCE = "files need since: the commit they changed since (the first report has none)"
NO_PROJECT = "no project is known for this repository yet (a session's first event makes it)"


class CommitReport(TypedDict):
    project: str
    head: str
    since: str | None
    files: int  # file rows changed (core.anchors.changes_record)


def _sha(value: Any, field: str) -> str:
    if not isinstance(value, str) or not _SHA.match(value.strip().lower()):
        raise InvalidInput(SHA_INVALID.format(field=field, value=str(value)[:80]), field=field)
    return value.strip().lower()


def _path(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= PATH_MAX and "\x00" not in value


def commit_seen(project: Project | None) -> str | None:
    """The commit Winni last saw for the project (None: none yet)."""
    if project is None:
        return None
    seen = (project.settings or {}).get(SEEN_KEY)
    return seen if isinstance(seen, str) and seen else None


def _changes(project: Project, files: Any, git_root: str, seen_at: datetime | None) -> list[anchors.Change]:
    if not isinstance(files, list) or len(files) > FILES_MAX:
        raise InvalidInput(FILES_INVALID, field="files")
    roots = projects.project_roots([project]) or ([git_root] if git_root else [])
    parsed = []
    for index, one in enumerate(files):
        valid = isinstance(one, dict) and one.get("status") in STATUS and _path(one.get("path")) \
            and (one["status"] != "R" or _path(one.get("renamed_to")))
        if not valid:
            raise InvalidInput(FILE_INVALID.format(index=index), field=f"files[{index}]")
        commit = _sha(one.get("commit"), f"files[{index}].commit")
        committed_at = parse_timestamp(one.get("committed_at"), field=f"files[{index}].committed_at")
        if committed_at is None:
            raise InvalidInput(FILE_INVALID.format(index=index), field=f"files[{index}].committed_at")
        parsed.append((one, commit, committed_at))
    now = timezone.now()
    found = []
    for one, commit, committed_at in parsed:
        # Paths as git lists them, relative to the repository's root; as the project knows them.
        path = paths.project_path(one["path"], roots=roots, cwd=git_root or None)
        target = paths.project_path(one["renamed_to"], roots=roots, cwd=git_root or None) if one["status"] == "R" else ""
        if not path or paths.outside_project(path):
            continue
        # A commit older than the last report came in since (a pull, a merge, a branch switched):
        # the change reached this clone after that report, not when it was committed.
        at = committed_at if seen_at is None or committed_at > seen_at else now
        found.append(anchors.Change(project_id=project.pk, path=path, change=STATUS[one["status"]], at=at,
                                    renamed_to=target, roots=tuple(roots), commit=commit))
    return _not_captured(project, found, seen_at)


def _not_captured(project: Project, changes: list[anchors.Change], seen_at: datetime | None) -> list[anchors.Change]:
    """Leave out the edits a session already captured: a file edited in a session since the last
    report, then committed, is that session's change (its mark names the session; the turns that
    followed the edit knew the new content and are not stale). A deletion or rename the commit
    holds and no session captured is kept."""
    if seen_at is None:
        return changes
    captured = {row.path: row for row in ProjectFile.objects.filter(
        project=project, path__in=[c.path for c in changes], commit="", changed_at__gt=seen_at)
        .exclude(session_id="")}
    return [c for c in changes if not (c.path in captured and c.change in (FileChange.EDIT, FileChange.WRITE)
                                       and captured[c.path].change in (FileChange.EDIT, FileChange.WRITE))]


def commits_record(*, project: Project | None, head: Any, since: Any = None, files: Any = None,
                   git_root: str = "") -> CommitReport:
    """The hook's report of the repository at SessionStart: HEAD, the commit Winni had seen
    (`since`, None on the first report) and the files changed between them. Records their changes
    (their anchored items become possibly stale) and HEAD as the commit seen. Nothing is written
    when anything in it is invalid."""
    if project is None:
        raise NotFound(NO_PROJECT, field="repository")
    head = _sha(head, "head")
    since = _sha(since, "since") if since else None
    if files and not since:
        raise InvalidInput(FILES_WITHOUT_SINCE, field="files")
    with storage_op("commits.record", project=project.slug) as log, transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        seen_at = parse_timestamp((project.settings or {}).get(SEEN_AT_KEY), field=SEEN_AT_KEY) \
            if since and commit_seen(project) else None
        changes = _changes(project, [] if files is None else files, git_root, seen_at) if since else []
        written = anchors.changes_record(changes)
        project.settings = {**(project.settings or {}), SEEN_KEY: head, SEEN_AT_KEY: timezone.now().isoformat()}
        project.save(update_fields=["settings"])
        log.update(head=head[:12], files=len(changes), written=written)
    return {"project": project.slug, "head": head, "since": since, "files": written}
