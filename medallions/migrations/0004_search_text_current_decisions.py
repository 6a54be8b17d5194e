"""Superseded and rejected decisions leave a medallion's search text (issue #22): recompute it for
every medallion that has one, and drop those medallions' vectors so the embedding sweep embeds the
new text."""
from django.db import migrations

CURRENT_DECISIONS = ("active", "proposed")


def _search_text(row) -> str:
    # medallions.services.search_text as of this migration.
    summary = row.summary or {}
    parts = [*row.graph_nodes, *row.tags, summary.get("high_level", "")]
    parts += [f"{s.get('name', '')}: {s.get('notes', '')}" for s in summary.get("subsystems", [])]
    parts += [f"{d.get('statement', '')} {d.get('rationale', '')}" for d in row.decisions or []
              if d.get("status", "active") in CURRENT_DECISIONS]
    parts += [f"{q.get('question', '')} {q.get('blocked_on', '')}" for q in row.open_questions or []]
    return "\n".join(part.strip() for part in parts if part and part.strip())


def recompute(apps, schema_editor):
    Medallion = apps.get_model("medallions", "Medallion")
    Embedding = apps.get_model("memory", "Embedding")
    changed = []
    for row in Medallion.objects.only("pk", "summary", "graph_nodes", "tags", "decisions", "open_questions",
                                      "search_text").iterator():
        text = _search_text(row)
        if text != row.search_text:
            Medallion.objects.filter(pk=row.pk).update(search_text=text)
            changed.append(str(row.pk))
    for start in range(0, len(changed), 1000):
        Embedding.objects.filter(kind="medallion", object_id__in=changed[start:start + 1000]).delete()


class Migration(migrations.Migration):

    dependencies = [
        ("medallions", "0003_medallion_project"),
        ("memory", "0002_memories_embeddings"),
    ]

    operations = [migrations.RunPython(recompute, migrations.RunPython.noop)]
