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
