"""The answer cache's key (SHA-256 of the normalised query) no longer counts trailing sentence
punctuation: rehash every entry from its question, and merge the entries that now share a key in
the same scope ("…amounts?" and "…amounts" were two). The kept entry is the one with an answer
(then pinned, then the most asked, then the oldest); it takes the others' asks, hits and feedback,
the earliest first ask, the latest last ask, the highest tier, and is pinned if any was."""
import hashlib
import re

from django.db import migrations

# A copy of memory.librarian.services.queries.normalize_query as of this migration.
_SPACE = re.compile(r"\s+")
_TRAILING_PUNCTUATION = re.compile(r"[\s.?!…;:,？！。，；：]+$")
TIER_ORDER = ["cold", "warm", "hot", "core"]


def normalize(query):
    spaced = _SPACE.sub(" ", query.strip().lower())
    return _TRAILING_PUNCTUATION.sub("", spaced) or spaced


def key(query):
    return hashlib.sha256(normalize(query).encode("utf-8")).hexdigest()


def rehash(apps, schema_editor):
    QueryMemory = apps.get_model("librarian", "QueryMemory")
    fields = ("pk", "project_id", "query_hash", "query_text", "answer", "pinned", "ask_count", "cache_hits",
              "feedback_positive", "feedback_negative", "first_asked", "last_asked", "tier")
    groups = {}
    for row in QueryMemory.objects.order_by("pk").values(*fields).iterator(chunk_size=2000):
        groups.setdefault((row["project_id"], key(row["query_text"])), []).append(row)
    changed = []
    for (_, new_key), rows in groups.items():
        if len(rows) == 1:
            if rows[0]["query_hash"] != new_key:
                changed.append((rows[0]["pk"], new_key, None))
            continue
        rows.sort(key=lambda r: (r["answer"] is None, not r["pinned"], -r["ask_count"], r["first_asked"], r["pk"]))
        keeper, others = rows[0], rows[1:]
        merged = {
            "ask_count": sum(r["ask_count"] for r in rows),
            "cache_hits": sum(r["cache_hits"] for r in rows),
            "feedback_positive": sum(r["feedback_positive"] for r in rows),
            "feedback_negative": sum(r["feedback_negative"] for r in rows),
            "first_asked": min(r["first_asked"] for r in rows),
            "last_asked": max(r["last_asked"] for r in rows),
            "tier": max((r["tier"] for r in rows), key=lambda t: TIER_ORDER.index(t) if t in TIER_ORDER else -1),
            "pinned": any(r["pinned"] for r in rows),
        }
        if merged["pinned"]:
            merged["expires_at"] = None  # pinned entries never expire
        QueryMemory.objects.filter(pk__in=[r["pk"] for r in others]).delete()
        changed.append((keeper["pk"], new_key, merged))
    # Every duplicate is gone before any key moves, so no update meets a key still held.
    for pk, new_key, merged in changed:
        QueryMemory.objects.filter(pk=pk).update(query_hash=new_key, **(merged or {}))


class Migration(migrations.Migration):

    dependencies = [
        ("librarian", "0002_cache_entries_per_project"),
    ]

    operations = [
        migrations.RunPython(rehash, migrations.RunPython.noop),
    ]
