"""Projects' business layer: which project a session works in (identity → project), finding a
project by name, the `project` filter every store applies, and the operations on projects
(create, rename, merge, list with counts).

Identity (docs/projects.md): a session tells what it can read cheaply — the origin remote, the
repository's root commit, the git root's path, the working directory. `project_resolve` looks the
project up by the normalised remote, else the root commit, else the git root (or, when the git
root is unknown, the nearest known git root above the working directory), else the working
directory; on a hit it attaches the keys the project did not have yet (a repository that gained a
remote keeps its project), on a miss it creates the project. So worktrees, clones and
subdirectories of one repository resolve to one project, a renamed folder keeps it, and two
repositories that share a folder name are two projects.

The stores (conversations, memories, medallions, contexts, cached answers) register themselves
here (`register_store`, from each app's AppConfig.ready) so counts and merges need no app code."""
from __future__ import annotations

import posixpath
import re
import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, TypeVar, cast
from urllib.parse import urlsplit

from django.db import connection, models, transaction
from django.db.models import BooleanField, Count, Q, QuerySet, Value
from django.utils import timezone
from django.utils.text import slugify

from core import access, paths
from core.errors import ApplicationError, Conflict, Forbidden, InvalidInput, NotFound
from core.logs import storage_op
from core.models import STRONG_KINDS, KeyKind, Project, ProjectKey

QS = TypeVar("QS", bound=QuerySet[Any])  # a queryset keeps its class (a model's own QuerySet) through scoping

NAME_MAX = 200
VALUE_MAX = 2000
SLUG_MAX = 100
PROJECT_UNKNOWN = ("{field}: no project named {name!r}; projects are created by capture (the hooks) or with "
                   "`manage.py winni_project create NAME`")
NAME_INVALID = "{field} must be a non-empty string of at most %d characters" % NAME_MAX
MERGE_SAME = "a project cannot be merged into itself"
# Hosts whose repository paths are case-insensitive: their paths are compared lower-cased.
CASE_INSENSITIVE_HOSTS = {"github.com", "gitlab.com", "bitbucket.org"}
_ROOT_COMMIT = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/]+)@)?(?P<host>[^:/]+):(?P<path>.+)$")
# Any constant: identifies "project creation" among PostgreSQL advisory locks.
RESOLVE_LOCK_KEY = 0x57_494E_4E49_5052  # "WINNIPR"


# --- the stores that carry a project ---------------------------------------------------------------


@dataclass(frozen=True)
class ProjectStore:
    """A store whose rows belong to projects, as registered by its app."""

    label: str  # "conversations": the key of counts
    model: type[models.Model]
    # ORM path from a row to its project ("project", or "conversation__project" for messages).
    lookup: str = "project"
    counted: bool = True  # listed with a count per project (winni_projects, the admin)
    # Moves the source project's rows to the target in a merge (inside its transaction), returning
    # how many moved; None: an UPDATE of the `lookup` foreign key. Stores reached through another
    # store (messages through conversations) set moved=False.
    merge: Callable[[Project, Project], int] | None = None
    moved: bool = True
    # Its rows of no project apply inside every project (a global memory, the global startup
    # context): a search or recall within a project takes them too unless asked for the project
    # only (search_scope).
    global_applies: bool = False


_stores: dict[str, ProjectStore] = {}


def register_store(store: ProjectStore) -> None:
    _stores[store.label] = store


def stores() -> list[ProjectStore]:
    return list(_stores.values())


def project_id_of(label: str, pk: Any) -> int | None:
    """The project of one row of a registered store (None: global, or no such row)."""
    store = _stores[label]
    project_id: int | None = store.model._default_manager.filter(pk=pk).values_list(store.lookup, flat=True).first()
    return project_id


# --- the `project` filter and argument -----------------------------------------------------------------


def validate_project_name(value: Any, *, field: str = "project") -> str:
    if not isinstance(value, str) or not value.strip() or len(value.strip()) > NAME_MAX:
        raise InvalidInput(NAME_INVALID.format(field=field), field=field)
    return value.strip()


def project_find(value: str) -> Project | None:
    """The project a name means: its slug, else its name (case-insensitive, when only one project
    has it), else an alias (an earlier name, a merged project's slug or name)."""
    found = Project.objects.filter(slug=value.lower()).first()
    if found is None:
        named = list(Project.objects.filter(name__iexact=value)[:2])
        found = named[0] if len(named) == 1 else None
    if found is None:
        key = ProjectKey.objects.filter(kind=KeyKind.ALIAS, value=value).select_related("project").first()
        found = key.project if key else None
    return found


def project_for_write(value: Any, *, field: str = "project") -> Project | None:
    """The project a write names (None when none is given: a global row). A name that matches no
    project is refused (NotFound, like any reference to a row that does not exist), naming the
    field: projects are made by capture or `winni_project create`, never by a typo.
    A token limited to projects (core.access) writes only into one of them: none named, its only
    project; another project or a global row is Forbidden."""
    if value is None or value == "":
        return access.check_write_project(None, field=field)
    return access.check_write_project(project_get(name=value, field=field, error=NotFound), field=field)


def project_visible(project: Project | int | None) -> bool:
    """Whether the current token may see the rows of `project` (a Project or its id; None: the
    global rows)."""
    allowed = access.allowed_project_ids()
    project_id = project.pk if isinstance(project, Project) else project
    return allowed is None or (project_id is not None and project_id in allowed)


def require_visible(project: Project | int | None, *, field: str = "project") -> None:
    """Forbidden unless the current token may write rows of `project` (a write whose project
    follows from its content: a medallion's `repo:` scope)."""
    if not project_visible(project):
        current = access.current()
        allowed = ", ".join(current.project_slugs) if current else ""
        what = f"project {project.slug!r}" if isinstance(project, Project) else "a row of no project"
        raise Forbidden(access.PROJECT_OUTSIDE.format(field=field, token=current.token if current else "",
                                                      allowed=allowed or "(none)", what=what), field=field)


@dataclass(frozen=True)
class ScopeProjects:
    """The projects every row a ProjectFilter keeps is in (ProjectFilter.within): what a search
    over those rows can skip the other projects' vectors and indexes by (memory.vectors,
    memory.retrieval), the rows' own filters still judging which rows are in."""

    ids: frozenset[int]
    without_project: bool  # rows with no project are in too

    @property
    def only(self) -> int | None:
        """The one project the rows are all in (none without a project), else None."""
        return next(iter(self.ids)) if len(self.ids) == 1 and not self.without_project else None


@dataclass(frozen=True)
class Scope:
    """The rows of one kind a search may return (`rows`), with what the search needs to know of them
    that it must not read back out of the queryset: whether they are fewer than the whole table
    (`narrowed`: else the table's statistics stand for them) and the projects they are in
    (`within`, from the ProjectFilter that made them: the search skips the other
    projects' vectors and uses a project's own indexes by it). Made by ProjectFilter.scope."""

    rows: QuerySet[Any]
    narrowed: bool = True
    within: ScopeProjects | None = None

    def filter(self, *args: Any, **lookups: Any) -> Scope:
        """Fewer rows, in the same projects."""
        return Scope(rows=self.rows.filter(*args, **lookups), narrowed=True, within=self.within)

    def exclude(self, *args: Any, **lookups: Any) -> Scope:
        return Scope(rows=self.rows.exclude(*args, **lookups), narrowed=True, within=self.within)


@dataclass(frozen=True)
class ProjectFilter:
    """A validated `project` filter: none given (every row), one project, or a name that matches
    no project (no row: a filter never errs on a name it does not know). `allowed`: the projects
    the caller's token is limited to (core.access; None: no limit), taken when the filter is made."""

    given: bool = False
    project: Project | None = None
    allowed: frozenset[int] | None = field(default_factory=access.allowed_project_ids)
    # The named project's scope takes the rows of no project too (search_scope). Never for a
    # token limited to projects: it sees no global row.
    with_global: bool = False

    @property
    def matches_nothing(self) -> bool:
        if self.given and self.project is None:
            return True
        if self.allowed is None:
            return False
        return not self.allowed or (self.project is not None and self.project.pk not in self.allowed)

    @property
    def narrows(self) -> bool:
        """Whether the filter leaves rows out (a project named, or a token limited to projects)."""
        return self.given or self.allowed is not None

    def apply(self, queryset: QS, lookup: str = "project") -> QS:
        """The rows of `queryset` this filter keeps. Every store's project scoping goes through
        here (scope_queryset), and so does the restriction of a token limited to projects."""
        if self.matches_nothing:
            # No row, written as SQL (WHERE false): a none() queryset cannot be compiled into the
            # raw queries search builds from scopes.
            return queryset.filter(Value(False, output_field=BooleanField()))
        if self.given and self.with_global and self.allowed is None:
            return queryset.filter(Q(**{lookup: self.project}) | Q(**{f"{lookup}__isnull": True}))
        if self.given:
            return queryset.filter(**{lookup: self.project})
        if self.allowed is not None:
            return queryset.filter(**{f"{lookup}__in": sorted(self.allowed)})
        return queryset

    @property
    def within(self) -> ScopeProjects | None:
        """The projects the rows `apply` keeps are in (None: any row, of any project or none).
        Carried beside the rows to the search (core.projects.Scope) rather than read back out of
        the queryset's filters."""
        if self.matches_nothing:
            return ScopeProjects(frozenset(), False)
        if self.project is not None:  # given (a given name that matches nothing matched nothing above)
            return ScopeProjects(frozenset({self.project.pk}), self.with_global and self.allowed is None)
        if self.allowed is not None:
            return ScopeProjects(frozenset(self.allowed), False)
        return None

    def sql(self, column: str) -> tuple[str, list[Any]]:
        """`apply` as an SQL condition on `column` (a row's project id) and its parameters, for the
        searches that write their SQL themselves; ("", []) when the filter keeps every row."""
        within = self.within
        if within is None:
            return "", []
        if not within.ids and not within.without_project:
            return "FALSE", []
        if within.without_project:
            return f"({column} = ANY(%s) OR {column} IS NULL)", [sorted(within.ids)]
        if within.only is not None:
            return f"{column} = %s", [within.only]
        return f"{column} = ANY(%s)", [sorted(within.ids)]

    def scope(self, queryset: QuerySet[Any], lookup: str = "project") -> Scope:
        """The rows of `queryset` this filter keeps (apply), with the projects they are in (within),
        as a search takes them."""
        return Scope(rows=self.apply(queryset, lookup), narrowed=self.narrows, within=self.within)


def project_filter(value: Any, *, field: str = "project") -> ProjectFilter:
    if value is None or value == "":
        return ProjectFilter()
    if isinstance(value, Project):
        return ProjectFilter(given=True, project=value)
    return ProjectFilter(given=True, project=project_find(validate_project_name(value, field=field)))


PROJECT_ONLY_INVALID = "project_only must be true or false"


def search_scope(value: Any, *, model: type[models.Model], project_only: Any = False,
                 field: str = "project") -> ProjectFilter:
    """The one rule for which rows a search or recall within `value` (a project's name, a Project
    or None) reads of `model`'s: the project's rows, and when the model's store says its global rows
    apply everywhere (ProjectStore.global_applies: memories, startup contexts) the rows of no
    project too, unless `project_only`. Messages, medallions and the other stores: the project's
    rows only. No project named: every row. A token limited to projects (core.access) sees only
    its projects' rows, never a global one, whatever is asked. Every search path (recall, automatic
    recall, search_memory, the admin's search) asks here."""
    if not isinstance(project_only, bool):
        raise InvalidInput(PROJECT_ONLY_INVALID, field="project_only")
    found = project_filter(value, field=field)
    store = next((store for store in _stores.values() if store.model is model), None)
    if found.given and not project_only and store is not None and store.global_applies:
        return ProjectFilter(given=True, project=found.project, allowed=found.allowed, with_global=True)
    return found


def scope_queryset(queryset: QS, project: Any, *, lookup: str = "project", field: str = "project") -> QS:
    """`queryset` narrowed to the project named by `project` (a name, a Project or None: no
    narrowing); a name that matches no project gives no rows."""
    return project_filter(project, field=field).apply(queryset, lookup)


# --- identity ---------------------------------------------------------------------------------------------


def normalise_remote(url: Any, *, field: str = "remote") -> str | None:
    """host/org/repo of a git remote URL, the same for every way of writing it:
    `git@github.com:Org/Repo.git`, `ssh://git@github.com/org/repo`,
    `https://user:pw@github.com/org/repo.git/` → `github.com/org/repo`. The host is lower-cased,
    credentials, port, `.git` and trailing slashes go; on github.com, gitlab.com and bitbucket.org
    the path is lower-cased too (they ignore its case). A local path (`/srv/git/app.git`,
    `file:///srv/git/app.git`) is kept as a path. None for an empty value."""
    if url is None or (isinstance(url, str) and not url.strip()):
        return None
    if not isinstance(url, str) or len(url) > VALUE_MAX:
        raise InvalidInput(f"{field} must be a git remote URL of at most {VALUE_MAX} characters", field=field)
    text = url.strip()
    scp = _SCP_LIKE.match(text) if "://" not in text else None
    if scp and not text.startswith("/"):
        host, path = scp.group("host"), scp.group("path")
    elif "://" in text:
        parts = urlsplit(text)
        host, path = (parts.hostname or ""), parts.path
        if parts.scheme == "file" or not host:
            host = ""
    else:
        host, path = "", text  # a local path used as a remote
    host = host.lower()
    path = path.strip().rstrip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    path = path.rstrip("/")
    if host:
        path = path.lstrip("/")
        if host in CASE_INSENSITIVE_HOSTS:
            path = path.lower()
        normalised = f"{host}/{path}" if path else host
    else:
        normalised = posixpath.normpath(path) if path else ""
    if not normalised or normalised == ".":
        raise InvalidInput(f"{field}: {url[:100]!r} is not a git remote URL", field=field)
    return normalised


def normalise_path(value: Any, *, field: str) -> str | None:
    """An absolute path without trailing slash or `..` (None for an empty value): POSIX, or a
    Windows one from a drive or share in one spelling (`C:/Users/me/shop`: core.paths.clean_path),
    so a Windows repository is known by its folder too."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or len(value) > VALUE_MAX or "\x00" in value:
        raise InvalidInput(f"{field} must be a path of at most {VALUE_MAX} characters", field=field)
    path = value.strip()
    if paths.windows_absolute(path):
        return paths.clean_path(path) or None
    if not path.startswith("/"):
        raise InvalidInput(f"{field} must be an absolute path, got {path[:100]!r}", field=field)
    return posixpath.normpath(path).replace("//", "/")


def _ancestors(path: str) -> list[str]:
    """The path and every folder above it, nearest first ("/" excluded: it is nobody's git root)."""
    found = []
    # A drive (`C:`) or a share's root (`//server`'s parent) is nobody's git root either.
    while path not in ("/", "") and posixpath.basename(path) and not re.fullmatch(r"[A-Za-z]:", path):
        found.append(path)
        path = posixpath.dirname(path)
    return found


@dataclass(frozen=True)
class Identity:
    """What a session can tell about where it runs (normalised; see Identity.of)."""

    remote: str | None = None
    root_commit: str | None = None
    git_root: str | None = None
    cwd: str | None = None

    @classmethod
    def of(cls, *, remote: Any = None, root_commit: Any = None, git_root: Any = None, cwd: Any = None,
           prefix: str = "") -> "Identity":
        """Validate and normalise; each error names `<prefix><field>`."""
        commit = None
        if root_commit not in (None, ""):
            if not isinstance(root_commit, str) or not _ROOT_COMMIT.match(root_commit.strip().lower()):
                raise InvalidInput(f"{prefix}root_commit must be a full commit hash (40 or 64 hex digits)",
                                   field=f"{prefix}root_commit")
            commit = root_commit.strip().lower()
        return cls(
            remote=normalise_remote(remote, field=f"{prefix}remote"),
            root_commit=commit,
            git_root=normalise_path(git_root, field=f"{prefix}git_root"),
            cwd=normalise_path(cwd, field=f"{prefix}cwd"),
        )

    @property
    def empty(self) -> bool:
        return not (self.remote or self.root_commit or self.git_root or self.cwd)

    def keys(self) -> list[tuple[str, str]]:
        """The keys a project found or made from this identity keeps. A working directory is a key
        only outside a git repository (inside one, the git root says more)."""
        keys = [(KeyKind.REMOTE, self.remote), (KeyKind.ROOT_COMMIT, self.root_commit), (KeyKind.PATH, self.git_root)]
        if not self.git_root:
            keys.append((KeyKind.CWD, self.cwd))
        return [(str(kind), value) for kind, value in keys if value]

    @property
    def folder_name(self) -> str | None:
        """What the scheme before projects called it: the git root's folder name, else the working
        directory's (legacy projects made by the migration carry it as an alias)."""
        path = self.git_root or self.cwd
        return posixpath.basename(path) if path else None

    @property
    def display_name(self) -> str | None:
        """A new project's name: the remote's last part, else the folder name."""
        if self.remote:
            return self.remote.rstrip("/").rpartition("/")[2] or self.remote
        return self.folder_name


def _contradicts(project_keys: list[ProjectKey], identity: Identity) -> bool:
    """True when `identity` names a remote or root commit of a kind the project has, with a value
    it does not have: another repository at a path (or under a name) the project used."""
    held: dict[str, set[str]] = {}
    for key in project_keys:
        held.setdefault(key.kind, set()).add(key.value)
    wanted = {KeyKind.REMOTE: identity.remote, KeyKind.ROOT_COMMIT: identity.root_commit}
    return any(value and kind in held and value not in held[kind] for kind, value in wanted.items())


def _keys_of(project_ids: set[int]) -> dict[int, list[ProjectKey]]:
    found: dict[int, list[ProjectKey]] = {pk: [] for pk in project_ids}
    for key in ProjectKey.objects.filter(project_id__in=project_ids):
        found[key.project_id].append(key)
    return found


def _lookup(identity: Identity) -> tuple[Project | None, list[ProjectKey]]:
    """The project identity's keys lead to (and its keys), strongest key first; None on a miss."""
    wanted = Q()
    if identity.remote:
        wanted |= Q(kind=KeyKind.REMOTE, value=identity.remote)
    if identity.root_commit:
        wanted |= Q(kind=KeyKind.ROOT_COMMIT, value=identity.root_commit)
    if identity.git_root:
        wanted |= Q(kind=KeyKind.PATH, value=identity.git_root)
    elif identity.cwd:
        # No git root known (a transcript from another machine, an old hook): the nearest git root
        # above the working directory that a capture made known.
        wanted |= Q(kind=KeyKind.PATH, value__in=_ancestors(identity.cwd)) | Q(kind=KeyKind.CWD, value=identity.cwd)
    if not wanted:
        return None, []
    hits = list(ProjectKey.objects.filter(wanted).select_related("project"))
    if not hits:
        return None, []
    keys = _keys_of({hit.project_id for hit in hits})

    def rank(key: ProjectKey) -> tuple[int, int]:
        order = [KeyKind.REMOTE, KeyKind.ROOT_COMMIT, KeyKind.PATH, KeyKind.CWD]
        return order.index(KeyKind(key.kind)), -len(key.value)

    for hit in sorted(hits, key=rank):
        if hit.kind in STRONG_KINDS or not _contradicts(keys[hit.project_id], identity):
            return hit.project, keys[hit.project_id]
    return None, []


def _claimable(identity: Identity) -> tuple[Project | None, list[ProjectKey]]:
    """A project made by the migration from a folder name (alias keys only, no identity yet) that
    this identity's folder name claims."""
    name = identity.folder_name
    if not name:
        return None, []
    # Case-insensitively, as the migration matched the names of the stores with each other.
    key = ProjectKey.objects.filter(kind=KeyKind.ALIAS, value__iexact=name).select_related("project").first()
    if key is None:
        return None, []
    keys = _keys_of({key.project_id})[key.project_id]
    if any(k.kind != KeyKind.ALIAS for k in keys):
        return None, []
    return key.project, keys


def unique_slug(name: str, *, exclude_pk: int | None = None) -> str:
    """A slug for `name` that no other project has: name, name-2, name-3 …"""
    base = slugify(name)[: SLUG_MAX - 6].strip("-") or "project"
    others = Project.objects.filter(slug__startswith=base)
    if exclude_pk is not None:
        others = others.exclude(pk=exclude_pk)
    taken = set(others.values_list("slug", flat=True))
    slug, number = base, 2
    while slug in taken:
        slug, number = f"{base}-{number}", number + 1
    return slug


def _lock_projects() -> None:
    """Serialise project creation and key changes until the transaction ends (two first events
    of one repository must not make two projects)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [RESOLVE_LOCK_KEY])


def _attach(project: Project, have: list[ProjectKey], identity: Identity) -> list[str]:
    """Give the project the identity keys it lacks. A path or working directory another project
    held moves here (the repository now at that path owns it); a remote or root commit another
    project holds stays there (`winni_project merge` joins the two). Caller holds the lock."""
    held = {(key.kind, key.value) for key in have}
    added = []
    for kind, value in identity.keys():
        if (kind, value) in held:
            continue
        other = ProjectKey.objects.filter(kind=kind, value=value).first()
        if other is None:
            ProjectKey.objects.create(project=project, kind=kind, value=value)
        elif kind in (KeyKind.PATH, KeyKind.CWD):
            ProjectKey.objects.filter(pk=other.pk).update(project=project)
        else:
            continue
        added.append(kind)
    return added


def project_resolve(identity: Identity, *, create: bool = True) -> Project | None:
    """The project `identity` belongs to (see the module docstring); with `create`, a miss makes
    it and missing keys are attached. Without `create` (a read) nothing is written and a miss is
    None. An empty identity is None."""
    if identity.empty:
        return None
    project, have = _lookup(identity)
    if project is None:
        project, have = _claimable(identity)
    if not create:
        return project
    held = {(key.kind, key.value) for key in have}
    if project is not None and all(key in held for key in identity.keys()):
        return project  # the usual case: known project, nothing to add, no lock taken
    with storage_op("project.resolve") as log, transaction.atomic():
        _lock_projects()
        # Again under the lock: a concurrent first event may have made it meanwhile.
        project, have = _lookup(identity)
        if project is None:
            project, have = _claimable(identity)
            log["claimed"] = project is not None
        if project is None:
            name = (identity.display_name or "project")[:NAME_MAX]
            project = Project.objects.create(name=name, slug=unique_slug(name))
            log["created"] = True
        log.update(project=project.slug, added=_attach(project, have, identity))
    return project


# --- activity -------------------------------------------------------------------------------------------------

TOUCH_EVERY_SECONDS = 60
_touched: dict[int, float] = {}


def project_touch(project_id: int | None) -> None:
    """Move the project's last activity to now, at most about once a minute per project (the
    first write of each minute in this process, and only when the row is older than a minute),
    after the caller's transaction commits: a captured message must not cost a project write."""
    if project_id is None:
        return
    now = time.monotonic()
    if now - _touched.get(project_id, float("-inf")) < TOUCH_EVERY_SECONDS:
        return
    _touched[project_id] = now

    def bump() -> None:
        moment = timezone.now()
        cutoff = moment - timedelta(seconds=TOUCH_EVERY_SECONDS)
        Project.objects.filter(pk=project_id, last_activity_at__lt=cutoff).update(last_activity_at=moment)

    transaction.on_commit(bump)


def project_roots(projects: list[Project | int | None]) -> list[str]:
    """The folders the projects live in, as capture learnt them: their git roots (every clone and
    worktree), else — a project outside any git repository — its working directories. What
    core.paths.project_path reads paths relative to."""
    ids = [p.pk if isinstance(p, Project) else p for p in projects if p is not None]
    if not ids:
        return []
    keys = list(ProjectKey.objects.filter(project_id__in=ids, kind__in=(KeyKind.PATH, KeyKind.CWD))
                .values_list("kind", "value"))
    roots = [value for kind, value in keys if kind == KeyKind.PATH]
    return roots or [value for kind, value in keys if kind == KeyKind.CWD]


# --- operations ---------------------------------------------------------------------------------------------------


def project_get(*, name: Any, field: str = "project", error: type[ApplicationError] = NotFound) -> Project:
    """A project by slug, name or alias (or the Project itself); `error` (NotFound: the project
    addressed is missing) names the field when none matches."""
    if isinstance(name, Project):
        return name
    value = validate_project_name(name, field=field)
    project = project_find(value)
    if project is None:
        raise error(PROJECT_UNKNOWN.format(field=field, name=value), field=field)
    return project


def project_create(*, name: Any, path: Any = None, remote: Any = None) -> Project:
    """A project made by hand (`winni_project create`), optionally with the git root it lives in
    and its remote, so capture finds it. A key another project holds is refused."""
    name = validate_project_name(name, field="name")
    identity = Identity.of(remote=remote, git_root=path)
    with storage_op("project.create") as log, transaction.atomic():
        _lock_projects()
        for kind, value in identity.keys():
            other = ProjectKey.objects.filter(kind=kind, value=value).select_related("project").first()
            if other is not None:
                field = "remote" if kind == KeyKind.REMOTE else "path"
                raise Conflict(f"{field}: {value!r} already identifies project {other.project.slug!r}", field=field)
        project = Project.objects.create(name=name, slug=unique_slug(name))
        _attach(project, [], identity)
        log["project"] = project.slug
    return project


def project_rename(*, project: Any, name: Any) -> Project:
    """A new name and slug; the old slug stays an alias, so filters and `repo:<slug>` scopes that
    use it still find the project."""
    target = project_get(name=project)
    name = validate_project_name(name, field="name")
    with storage_op("project.rename", project=target.slug) as log, transaction.atomic():
        _lock_projects()
        old = target.slug
        target.name = name
        target.slug = unique_slug(name, exclude_pk=target.pk)
        target.save(update_fields=["name", "slug"])
        if old != target.slug:
            _add_alias(target, old)
        log["slug"] = target.slug
    return target


def _add_alias(project: Project, value: str) -> None:
    """Caller holds the lock. An alias another project already has stays theirs."""
    if value and not ProjectKey.objects.filter(kind=KeyKind.ALIAS, value=value).exists():
        ProjectKey.objects.create(project=project, kind=KeyKind.ALIAS, value=value)


def project_merge(*, source: Any, target: Any, dry_run: bool = False) -> dict[str, int]:
    """Move every row of `source` into `target` in one transaction (each store's own rule for
    rows that collide), keep the source's keys, slug and name as the target's, and delete the
    source. Returns the rows moved per store (`dry_run`: the source's rows per counted store,
    nothing changed)."""
    source_project = project_get(name=source, field="source")
    target_project = project_get(name=target, field="target")
    if source_project.pk == target_project.pk:
        raise Conflict(f"{MERGE_SAME} ({source_project.slug!r})", field="target")
    if dry_run:
        return project_list(project=source_project)[0][1]
    moved: dict[str, int] = {}
    with storage_op("project.merge", source=source_project.slug, target=target_project.slug) as log, \
            transaction.atomic():
        _lock_projects()
        list(Project.objects.select_for_update().filter(pk__in=[source_project.pk, target_project.pk]))
        for store in _stores.values():
            if not store.moved:
                continue
            if store.merge is not None:
                moved[store.label] = store.merge(source_project, target_project)
            else:
                moved[store.label] = store.model._default_manager.filter(**{store.lookup: source_project}).update(
                    **{store.lookup: target_project})
        ProjectKey.objects.filter(project=source_project).update(project=target_project)
        Project.objects.filter(pk=source_project.pk).delete()
        for alias in (source_project.slug, source_project.name):
            _add_alias(target_project, alias)
        if source_project.last_activity_at > target_project.last_activity_at:
            Project.objects.filter(pk=target_project.pk).update(last_activity_at=source_project.last_activity_at)
        log["moved"] = moved
    return moved


def project_counts(project_ids: list[int] | None = None) -> dict[int, dict[str, int]]:
    """Rows per project in every counted store (one GROUP BY per store)."""
    counts: dict[int, dict[str, int]] = {}
    for store in _stores.values():
        if not store.counted:
            continue
        rows = store.model._default_manager.exclude(**{f"{store.lookup}__isnull": True})
        if project_ids is not None:
            rows = rows.filter(**{f"{store.lookup}__in": project_ids})
        for project_id, n in rows.order_by().values_list(store.lookup).annotate(n=Count("*")):
            counts.setdefault(project_id, {})[store.label] = n
    return counts


def project_delete_if_empty(project: Project) -> bool:
    """Delete a project no counted store holds a row of (its keys go with it); whether it was.
    For what a probe made and left empty (./winni doctor's synthetic prompt in a new folder)."""
    if any(project_counts([project.pk]).get(project.pk, {}).values()):
        return False
    project.delete()
    return True


def project_list(*, project: Any = None) -> list[tuple[Project, dict[str, int]]]:
    """Every project (or the one named: the filter), most recently active first, with its rows
    per store (0 where it has none) and its keys prefetched."""
    wanted = project_filter(project)
    queryset = Project.objects.all()
    if wanted.matches_nothing:
        queryset = queryset.none()
    elif wanted.given and wanted.project is not None:  # (given and no project: matches nothing)
        queryset = queryset.filter(pk=wanted.project.pk)
    elif wanted.allowed is not None:
        queryset = queryset.filter(pk__in=wanted.allowed)
    projects = list(queryset.prefetch_related("keys").order_by("-last_activity_at", "slug"))
    counts = project_counts([p.pk for p in projects]) if projects else {}
    labels = [store.label for store in _stores.values() if store.counted]
    return [(p, {label: counts.get(p.pk, {}).get(label, 0) for label in labels}) for p in projects]


def slug_of(row: models.Model) -> str | None:
    """The slug of a row's project, for outputs (None: global). Load lists with
    select_related("project"): otherwise each row costs a query."""
    return cast(Any, row).project.slug if getattr(row, "project_id", None) else None  # any app's model

