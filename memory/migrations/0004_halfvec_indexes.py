"""Rebuild each (model, kind) HNSW index over halfvec instead of vector: half the size, so a search
walks half the pages (see memory.vectors.INDEX_STORAGE). Self-contained: a migration must not
follow later changes of the app's code."""
import hashlib

from django.db import migrations


def _name(model: str, kind: str, dimensions: int, storage: str) -> str:
    key = f"{model}|{kind}|{dimensions}" if storage == "vector" else f"{model}|{kind}|{dimensions}|{storage}"
    return f"emb_hnsw_{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def _swap(schema_editor, old_storage: str, new_storage: str) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT model, kind, dimensions FROM memory_embedding")
        for model, kind, dimensions in cursor.fetchall():
            old = _name(model, kind, dimensions, old_storage)
            cursor.execute("SELECT 1 FROM pg_class WHERE relname = %s", [old])
            if not cursor.fetchone():
                continue  # never indexed (the next embedding builds the new one)
            new = _name(model, kind, dimensions, new_storage)
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS {new} ON memory_embedding USING hnsw "
                f"((vector::{new_storage}({int(dimensions)})) {new_storage}_cosine_ops) "
                f"WITH (m = 16, ef_construction = 64) WHERE model = %s AND kind = %s",
                [model, kind],
            )
            cursor.execute(f"DROP INDEX {old}")


def forwards(apps, schema_editor):
    _swap(schema_editor, "vector", "halfvec")


def backwards(apps, schema_editor):
    _swap(schema_editor, "halfvec", "vector")


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_librarian")]
    operations = [migrations.RunPython(forwards, backwards)]
