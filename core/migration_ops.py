"""Operations that several apps' migrations share. Each takes everything it builds from its
arguments, so a migration keeps doing what it did when it was written."""
from collections.abc import Iterable
from datetime import datetime

from django.apps.registry import Apps
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import migrations, models
from django.db.backends.utils import CursorWrapper
from django.db.migrations.operations.base import Operation
from django.db.models.expressions import Expression


def regenerate_search_vector(model_name: str, index_name: str, expression: Expression) -> list[Operation]:
    """Give `model_name.search_vector` a new generated expression. Django cannot alter a generated
    column, so: drop its GIN index and the column, add both again (PostgreSQL computes the column
    for every row and builds the index in the same migration)."""
    return [
        migrations.RemoveIndex(model_name=model_name, name=index_name),
        migrations.RemoveField(model_name=model_name, name="search_vector"),
        migrations.AddField(
            model_name=model_name,
            name="search_vector",
            field=models.GeneratedField(db_persist=True, expression=expression, output_field=SearchVectorField()),
        ),
        migrations.AddIndex(model_name=model_name, index=GinIndex(fields=["search_vector"], name=index_name)),
    ]


# --- projects from the names used before projects existed --------------------------------------

LEGACY_PREFIX = "repo:"


def _free_slug(Project: type[models.Model], name: str) -> str:
    from django.utils.text import slugify

    base = slugify(name)[:94].strip("-") or "project"
    taken = set(Project._default_manager.filter(slug__startswith=base).values_list("slug", flat=True))
    slug, number = base, 2
    while slug in taken:
        slug, number = f"{base}-{number}", number + 1
    return slug


def legacy_project(apps: Apps, name: str, last_activity: datetime | None = None) -> int:
    """The id of the project a legacy name stands for (a git root's folder name, as conversations'
    `metadata.project`, memories' `repo:` tags and medallions' `repo:` scope nodes used it): the
    project with that alias (case-insensitively), else one made now with the name, a free slug and
    the name as its alias. Such a project has no identity key yet: the first capture from a git
    root with that folder name claims it (core.projects). `last_activity` moves its last activity
    forward."""
    from django.utils import timezone

    Project = apps.get_model("core", "Project")
    ProjectKey = apps.get_model("core", "ProjectKey")
    name = name.strip()[:200]
    key = ProjectKey._default_manager.filter(kind="alias", value__iexact=name).order_by("pk").first()
    if key is None:
        now = timezone.now()
        project = Project._default_manager.create(name=name, slug=_free_slug(Project, name), created_at=now,
                                         last_activity_at=last_activity or now)
        ProjectKey._default_manager.create(project=project, kind="alias", value=name, created_at=now)
        return int(project.pk)
    if last_activity is not None:
        Project._default_manager.filter(pk=key.project_id, last_activity_at__lt=last_activity).update(
            last_activity_at=last_activity)
    return int(key.project_id)


def legacy_name(items: Iterable[object] | None) -> str | None:
    """The name in the first `repo:<name>` of a list of tags or scope nodes."""
    for item in items or []:
        if isinstance(item, str) and item.startswith(LEGACY_PREFIX) and item[len(LEGACY_PREFIX):].strip():
            return item[len(LEGACY_PREFIX):].strip()
    return None


# --- indexes after a backfill ------------------------------------------------------------------


def compact_indexes(cursor: CursorWrapper, tables: list[str]) -> list[str]:
    """Rebuild the B-tree and GIN indexes of `tables` that hold rows (HNSW indexes are left alone:
    rebuilding one takes minutes per million vectors); returns their names. After an UPDATE that
    gave every row a new version (a backfilled column that an index covers: no HOT update), each
    index holds the old entries' half-empty pages, or, built in the UPDATE's own transaction, the
    old versions themselves: 1M messages given their project, their full-text index 670 MB
    instead of 327, and every search reading twice the pages. Must run in a transaction after the
    UPDATE's: within it, a rebuild still indexes the versions the UPDATE replaced."""
    names: list[str] = []
    for table in tables:
        cursor.execute(f'SELECT EXISTS (SELECT 1 FROM "{table}")')
        if not cursor.fetchone()[0]:
            continue  # a new install's empty table: nothing to compact
        cursor.execute("SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                       "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = %s::regclass "
                       "AND a.amname IN ('btree', 'gin') ORDER BY c.relname", [table])
        names += [name for (name,) in cursor.fetchall()]
    for name in names:
        cursor.execute(f'REINDEX INDEX "{name}"')
    return names
