from django.db import migrations


class Migration(migrations.Migration):
    """A message's `search_vector` is stored in its row, not in the table's TOAST relation.

    Under the default storage (EXTENDED) a `tsvector` over ≈ 2 KB is compressed and, when still
    too large, moved out of line: a long tool output's vector lived in TOAST chunks. BM25 reads
    the vector of every candidate (`ts_rank_cd`), so ranking the ≈ 1,000 candidates of a common
    word in a project fetched thousands of TOAST chunks through their index. With STORAGE MAIN
    PostgreSQL compresses the vector and keeps it in the row unless the row cannot fit a page.
    Measured on 1,000,000 realistic messages (2-core AVX2-only EPYC): BM25 of a project's
    messages 22.6 → 16.6 ms, `winni_context`'s message ranking ≈ 20 → 14–16 ms; the heap grows
    from 1.1 to 2.2 GB, the table with its TOAST and indexes by 5.5 %.

    Only rows written from now on are stored this way; `winni_vacuum --full` rewrites the table
    and moves the existing vectors in (docs/operations.md)."""

    dependencies = [
        ('conversations', '0007_compact_message_indexes'),
    ]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE conversations_message ALTER COLUMN search_vector SET STORAGE MAIN",
            "ALTER TABLE conversations_message ALTER COLUMN search_vector SET STORAGE EXTENDED",
        ),
    ]
