import hashlib

from django.db import migrations

from core.migration_ops import compact_indexes


def build_indexes(apps, schema_editor):
    """The HNSW index of every (model, kind) that has vectors, as memory.vectors.index_ensure built
    them when this was written (partial, cosine over halfvec, m 16, ef_construction 64), for those
    migration 0011 dropped; an index still there is left alone. First the B-tree indexes, compacted
    after 0011's copy of the projects (compact_indexes: a new version of each vector in every one,
    and 0011's own two built with the old versions too), now that the copy is committed."""
    with schema_editor.connection.cursor() as cursor:
        # In the building process's own memory (no parallel workers: they would share one segment
        # of this size, more than a container's /dev/shm), which grows only as far as the graph
        # needs (1M 384-d vectors: ≈ 1.2 GB; past the limit the build goes on far more slowly).
        cursor.execute("SET LOCAL max_parallel_maintenance_workers = 0")
        cursor.execute("SET LOCAL maintenance_work_mem = '2GB'")
        cursor.execute("SELECT EXISTS (SELECT 1 FROM memory_embedding WHERE project_id IS NOT NULL)")
        if cursor.fetchone()[0]:
            compact_indexes(cursor, ["memory_embedding"])
        cursor.execute("SELECT DISTINCT model, kind, dimensions FROM memory_embedding")
        wanted = cursor.fetchall()
        for model, kind, dimensions in wanted:
            key = f"{model}|{kind}|{int(dimensions)}|halfvec"
            name = f"emb_hnsw_{hashlib.sha256(key.encode()).hexdigest()[:16]}"
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON memory_embedding USING hnsw "
                f"((vector::halfvec({int(dimensions)})) halfvec_cosine_ops) "
                f"WITH (m = 16, ef_construction = 64) WHERE model = %s AND kind = %s",
                [model, kind],
            )


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0011_embedding_project'),
    ]

    operations = [
        migrations.RunPython(build_indexes, migrations.RunPython.noop),
    ]
