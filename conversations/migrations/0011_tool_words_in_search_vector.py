import django.contrib.postgres.search
from django.db import migrations

import core.searchable
from core.migration_ops import regenerate_search_vector


class Migration(migrations.Migration):
    """A message's search_vector reads a captured tool call without its JSON keys (core.searchable.
    ToolWords): every row is indexed again (the column and its GIN index are made anew; projects'
    own full-text indexes go with the column and memory.vectors.project_indexes_sync builds them
    again), then kept in its row as 0008 asked."""

    dependencies = [
        ('winni_site', '0009_tool_words'),
        ('conversations', '0010_digest_writer_note'),
    ]

    operations = [
        *regenerate_search_vector(
            'message', 'msg_search_vector',
            django.contrib.postgres.search.CombinedSearchVector(django.contrib.postgres.search.SearchVector(core.searchable.ToolWords('content'), config='english'), '||', django.contrib.postgres.search.SearchVector(core.searchable.PathWords('content'), config='english'), django.contrib.postgres.search.SearchConfig('english')),
        ),
        migrations.RunSQL(
            "ALTER TABLE conversations_message ALTER COLUMN search_vector SET STORAGE MAIN",
            "ALTER TABLE conversations_message ALTER COLUMN search_vector SET STORAGE EXTENDED",
        ),
    ]
