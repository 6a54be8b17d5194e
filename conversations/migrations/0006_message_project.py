import django.db.models.deletion
from django.db import migrations, models

# Message.project is its conversation's project, kept by the database so that no write path (the
# services, a bulk update, a project merge, an import) can leave it behind: a message takes its
# conversation's project when inserted (or moved to another conversation), and a conversation's
# messages follow it when its project changes. Writes of the column itself are overruled.
TRIGGERS = """
CREATE OR REPLACE FUNCTION winni_message_project() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.project_id := (SELECT project_id FROM conversations_conversation WHERE id = NEW.conversation_id);
    RETURN NEW;
END $$;
CREATE TRIGGER message_project BEFORE INSERT OR UPDATE OF conversation_id, project_id
    ON conversations_message FOR EACH ROW EXECUTE FUNCTION winni_message_project();

CREATE OR REPLACE FUNCTION winni_conversation_project() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations_message SET project_id = NEW.project_id
    WHERE conversation_id = NEW.id AND project_id IS DISTINCT FROM NEW.project_id;
    RETURN NULL;
END $$;
CREATE TRIGGER conversation_project AFTER UPDATE OF project_id ON conversations_conversation
    FOR EACH ROW WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id)
    EXECUTE FUNCTION winni_conversation_project();
"""
DROP_TRIGGERS = """
DROP TRIGGER IF EXISTS conversation_project ON conversations_conversation;
DROP FUNCTION IF EXISTS winni_conversation_project();
DROP TRIGGER IF EXISTS message_project ON conversations_message;
DROP FUNCTION IF EXISTS winni_message_project();
"""
# Existing messages of conversations that have a project (the others stay NULL), before the index
# is built (one pass instead of an index entry per updated row); then the column's statistics, which
# size every project-filtered search until autovacuum's next ANALYZE (without them the planner takes
# any project for 0.5 % of the messages).
BACKFILL = """
UPDATE conversations_message m SET project_id = c.project_id
FROM conversations_conversation c WHERE c.id = m.conversation_id AND c.project_id IS NOT NULL;
"""
STATISTICS = "ANALYZE conversations_message (project_id);"


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0005_conversation_title_and_activity'),
        ('core', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='message',
            name='project',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, editable=False, null=True,
                                    on_delete=django.db.models.deletion.DO_NOTHING, related_name='+',
                                    to='core.project'),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.RunSQL(TRIGGERS, DROP_TRIGGERS),
        migrations.AddIndex(
            model_name='message',
            index=models.Index(fields=['project', '-created_at'], include=['conversation_id'],
                               name='msg_project_created'),
        ),
        migrations.RunSQL(STATISTICS, migrations.RunSQL.noop),
    ]
