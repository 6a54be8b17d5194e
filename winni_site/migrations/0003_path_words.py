"""winni_path_words(text): the SQL function behind searchable.search_vector (see PathWords there).

Tokens with a slash (paths, URLs without their scheme) give their file name when it has a dot
('retrieval.py': a word of its own for the parser) and every part split at slashes and dots; tokens with a dot followed by a letter ('settings.py',
'example.com') give their parts split at dots. Numbers like 3.14 are left alone. IMMUTABLE, so a
generated column may use it."""
from django.db import migrations

PATH_WORDS_SQL = r"""
CREATE OR REPLACE FUNCTION winni_path_words(body text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT coalesce(string_agg(
           CASE WHEN m[1] ~ '/[^/]*\.[^/]*$' THEN regexp_replace(m[1], '^.*/', '') || ' ' ELSE '' END
           || regexp_replace(m[1], '[/.]+', ' ', 'g'), ' '), '')
  FROM regexp_matches(body, '([[:alnum:]_.-]+(?:/[[:alnum:]_.-]+)+|[[:alnum:]_-]+(?:\.[[:alpha:]][[:alnum:]_-]*)+)', 'g') AS m
$$;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("winni_site", "0002_backup_run"),
    ]

    operations = [
        migrations.RunSQL(PATH_WORDS_SQL, reverse_sql="DROP FUNCTION IF EXISTS winni_path_words(text)"),
    ]
