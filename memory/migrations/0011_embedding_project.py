from django.db import migrations, models

# Embedding.project_id copies the project of its row: set by memory.vectors when the vector is
# stored, and moved by these triggers whenever the row's own project_id changes (a memory moved or
# merged, a message following its conversation: conversations' migration 0006).
TRIGGERS = """
CREATE OR REPLACE FUNCTION winni_embedding_project() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_embedding SET project_id = NEW.project_id
    WHERE kind = TG_ARGV[0] AND object_id = NEW.id::text AND project_id IS DISTINCT FROM NEW.project_id;
    RETURN NULL;
END $$;
CREATE TRIGGER embedding_project AFTER UPDATE OF project_id ON conversations_message
    FOR EACH ROW WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id)
    EXECUTE FUNCTION winni_embedding_project('message');
CREATE TRIGGER embedding_project AFTER UPDATE OF project_id ON memory_memory
    FOR EACH ROW WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id)
    EXECUTE FUNCTION winni_embedding_project('memory');
"""
DROP_TRIGGERS = """
DROP TRIGGER IF EXISTS embedding_project ON conversations_message;
DROP TRIGGER IF EXISTS embedding_project ON memory_memory;
DROP FUNCTION IF EXISTS winni_embedding_project();
"""
# The existing vectors' projects, from their rows.
COPIES = {
    "message": "UPDATE memory_embedding e SET project_id = m.project_id FROM conversations_message m "
               "WHERE e.kind = 'message' AND e.object_id = m.id::text AND m.project_id IS NOT NULL",
    "memory": "UPDATE memory_embedding e SET project_id = m.project_id FROM memory_memory m "
              "WHERE e.kind = 'memory' AND e.object_id = m.id::text AND m.project_id IS NOT NULL",
}


def copy_projects(apps, schema_editor):
    """Fill the new column without paying an HNSW insertion per updated row (a non-HOT update adds
    every new row version to every index; on 1M vectors that is hours): the HNSW indexes are
    dropped here and built again by migration 0012, in a transaction of its own (built in this
    one, they would also index every row version this UPDATE replaced: twice the rows)."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM memory_embedding WHERE kind = ANY(%s))", [list(COPIES)])
        if not cursor.fetchone()[0]:
            return
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memory_embedding' "
                       "AND indexdef ILIKE '%% USING hnsw %%'")
        for (name,) in cursor.fetchall():
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')
        for sql in COPIES.values():
            cursor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0006_message_project'),
        ('memory', '0010_merge_versions_and_plural_name'),
    ]

    operations = [
        migrations.AddField(
            model_name='embedding',
            name='project_id',
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(copy_projects, migrations.RunPython.noop),
        migrations.RunSQL(TRIGGERS, DROP_TRIGGERS),
        migrations.AddIndex(
            model_name='embedding',
            index=models.Index(fields=['model', 'kind', 'project_id'], name='embedding_model_kind_project'),
        ),
        migrations.AddIndex(
            model_name='embedding',
            index=models.Index(condition=models.Q(('kind', 'memory')), fields=['model', 'project_id'],
                               include=['object_id', 'vector'], name='embedding_memory_vectors'),
        ),
        migrations.RunSQL("ANALYZE memory_embedding (project_id);", migrations.RunSQL.noop),
    ]
