"""Operations that several apps' migrations share. Each takes everything it builds from its
arguments, so a migration keeps doing what it did when it was written."""
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import migrations, models


def regenerate_search_vector(model_name: str, index_name: str, expression) -> list:  # type: ignore[no-untyped-def]
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


def _free_slug(Project, name: str) -> str:  # type: ignore[no-untyped-def]
    from django.utils.text import slugify

    base = slugify(name)[:94].strip("-") or "project"
    taken = set(Project.objects.filter(slug__startswith=base).values_list("slug", flat=True))
    slug, number = base, 2
    while slug in taken:
        slug, number = f"{base}-{number}", number + 1
    return slug


def legacy_project(apps, name: str, last_activity=None) -> int:  # type: ignore[no-untyped-def]
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
    key = ProjectKey.objects.filter(kind="alias", value__iexact=name).order_by("pk").first()
    if key is None:
        now = timezone.now()
        project = Project.objects.create(name=name, slug=_free_slug(Project, name), created_at=now,
                                         last_activity_at=last_activity or now)
        ProjectKey.objects.create(project=project, kind="alias", value=name, created_at=now)
        return project.pk
    if last_activity is not None:
        Project.objects.filter(pk=key.project_id, last_activity_at__lt=last_activity).update(
            last_activity_at=last_activity)
    return key.project_id


def legacy_name(items) -> str | None:  # type: ignore[no-untyped-def]
    """The name in the first `repo:<name>` of a list of tags or scope nodes."""
    for item in items or []:
        if isinstance(item, str) and item.startswith(LEGACY_PREFIX) and item[len(LEGACY_PREFIX):].strip():
            return item[len(LEGACY_PREFIX):].strip()
    return None


# --- indexes after a backfill ------------------------------------------------------------------


def compact_indexes(cursor, tables: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
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
