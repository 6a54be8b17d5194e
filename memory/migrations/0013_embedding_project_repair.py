from django.db import migrations

# store_memory stored the vector its `similar` check computed without the memory's project
# (memory.services._store, from before migration 0011 added Embedding.project_id), so the vectors
# of memories written through it since then carry no project: a search within the project, and
# `similar` (memory.vectors.nearest_in_project), keep a project's vectors by that column. Copied
# from the memories once; the write path stores it since. Only the rows that differ are updated
# (memories written through store_memory in a project since 0011).
REPAIR = ("UPDATE memory_embedding e SET project_id = m.project_id FROM memory_memory m "
          "WHERE e.kind = 'memory' AND e.object_id = m.id::text AND e.project_id IS DISTINCT FROM m.project_id")


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0012_rebuild_vector_indexes'),
    ]

    operations = [
        migrations.RunSQL(REPAIR, migrations.RunSQL.noop),
    ]
