from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.apps import AppConfig

if TYPE_CHECKING:
    from core.searchable import HitFields


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from core import anchors, health, recall, recall_across
        from core.projects import ProjectStore, register_store
        from core.searchable import Searchable, register, searchable_changed
        from memory import embeddings, retrieval, vectors
        from memory.models import Memory
        from memory.services import (
            lexeme_weights,
            memories_load,
            memories_merge,
            memory_items,
            memory_successors,
            memory_supersede_item,
        )

        register(Searchable(kind="memory", model=Memory, text=lambda m: m.content, label=lambda m: m.content[:80],
                            filters={"tags": "tags__contains", "project": "project"},
                            current=lambda rows: rows.filter(superseded_by__isnull=True),
                            successors=memory_successors, hit_fields=_memory_hit_fields, project_column="project_id",
                            global_index=True))
        register_store(ProjectStore(label="memories", model=Memory, merge=memories_merge, global_applies=True))
        # A memory naming files is anchored to them; superseding a possibly stale one takes its replacement.
        anchors.register(anchors.Anchoring(kind="memory", load=memories_load, items=memory_items))
        anchors.register_supersession(anchors.Supersession(kind="memory", supersede=memory_supersede_item,
                                                           needs_replacement=True))
        # This app owns the vectors, so it ranks every search (core.recall.rank) and embeds every
        # searchable row once its write commits.
        recall.install_engine(retrieval.search)
        recall_across.install_query_readers(embed_query=lambda text: embeddings.embed_query(text),
                                            lexeme_weights=lambda lexemes: lexeme_weights(lexemes=lexemes))
        searchable_changed.connect(_on_searchable_changed, dispatch_uid="memory.embed_on_change")
        connection_created.connect(vectors.hnsw_session_settings, dispatch_uid="memory.hnsw_session_settings")
        health.register_check("embeddings", _embedding_health)


def _memory_hit_fields(memory: Any) -> HitFields:
    return {"superseded_by": str(memory.superseded_by_id) if memory.superseded_by_id else None}


def _on_searchable_changed(sender: Any, kind: str, ids: list[Any], **kwargs: Any) -> None:
    from memory import tasks

    tasks.enqueue(kind, ids)


def _embedding_health() -> dict[str, Any]:
    from memory import embeddings, vectors

    waiting, age = vectors.backlog_recorded()
    active = vectors.model_active()
    return {
        "status": "ok",
        "provider": embeddings.provider().name,
        "model": embeddings.model_name(),
        "search_model": active.name,
        # Counted by the beat sweep (WINNI_EMBEDDING_SWEEP_SECONDS); null until its first run.
        "backlog": None if waiting is None else sum(waiting.values()),
        "backlog_by_kind": waiting,
        "backlog_counted_seconds_ago": None if age is None else round(age, 1),
    }
