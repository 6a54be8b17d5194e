from django.db import migrations

# How many rows a search's scope holds, exact up to a cap and the planner's estimate beyond, in one
# round trip (memory.retrieval.scope_size): the planner is asked first and the rows are counted only
# when it expects at most `cap` of them. Asked from Python, that was two statements per kind of
# every search (EXPLAIN, then the count): a third of a small store's statements per recall. It plans
# with sequential scans allowed whatever the caller's transaction set (BM25's candidates are read
# with them off, and the kinds of one search share that transaction).
FUNCTION = """
CREATE OR REPLACE FUNCTION winni_capped_count(query text, cap bigint) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    plan json;
    estimate bigint;
    exact bigint;
    seqscan text := current_setting('enable_seqscan');
BEGIN
    PERFORM set_config('enable_seqscan', 'on', true);
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
    estimate := (plan -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
    IF estimate <= cap THEN
        EXECUTE 'SELECT count(*) FROM (' || query || ' LIMIT ' || (cap + 1) || ') AS scope' INTO exact;
    END IF;
    PERFORM set_config('enable_seqscan', seqscan, true);
    IF estimate > cap THEN
        RETURN ARRAY[estimate, 1];
    END IF;
    IF exact <= cap THEN
        RETURN ARRAY[exact, 0];
    END IF;
    RETURN ARRAY[greatest(estimate, exact), 1];
END
$$
"""


class Migration(migrations.Migration):

    dependencies = [
        ('memory', '0014_embedding_passage'),
    ]

    operations = [
        migrations.RunSQL(FUNCTION, "DROP FUNCTION IF EXISTS winni_capped_count(text, bigint)"),
    ]
