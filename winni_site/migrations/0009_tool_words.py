from django.db import migrations

# A captured tool call's content is JSON starting {"tool_name", {"tool_use", {"tool_result",
# {"tool_call" or {"tool" (conversations.toolcalls): its keys go, its escaped line breaks and tabs
# become spaces (core.searchable.ToolWords). A key is a JSON string followed by a colon; a key
# inside an escaped string (\"retries\": 4, a file's JSON being written) stays: that is content.
TOOL_WORDS_SQL = r"""
CREATE OR REPLACE FUNCTION winni_tool_words(body text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN body ~ '^\s*\{\s*"tool'
              THEN regexp_replace(regexp_replace(body, '"[A-Za-z_][A-Za-z0-9_]*"\s*:', ' ', 'g'), '\\[nrt]', ' ', 'g')
              ELSE body END
$$;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("winni_site", "0008_apitoken_toolsets"),
    ]

    operations = [
        migrations.RunSQL(TOOL_WORDS_SQL, reverse_sql="DROP FUNCTION IF EXISTS winni_tool_words(text)"),
    ]
