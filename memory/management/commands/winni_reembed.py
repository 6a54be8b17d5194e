"""Re-embed every searchable row (messages, memories, and any other registered kind) under one
model, then switch search over to it.

Why: changing WINNI_EMBEDDING_MODEL (or the provider) makes old vectors useless for new queries,
and vectors of two models must never be compared. Until this command finishes, search keeps using
the previous model; new rows written meanwhile are embedded under the configured model, so
nothing needs a second pass. Safe to interrupt and run again: rows that already have a vector
under the model are skipped. Run it in the background (`nohup … &`) on a large database.

`--passages`: only give the long rows stored before passages existed (migration memory 0014) the
vectors of their passages, under the active model, beside the vectors they have; nothing else
changes, and search uses each passage as soon as it is stored."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from core import searchable
from memory import embeddings, vectors
from memory.embeddings import EmbeddingError


class Command(BaseCommand):
    help = "Embed every searchable row under a model (default: the configured one) and switch search to it."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--model", help="model name for the configured provider (default WINNI_EMBEDDING_MODEL)")
        parser.add_argument("--kind", action="append", help="only these kinds (default: all registered)")
        parser.add_argument("--batch-size", type=int, default=256, help="rows read and embedded per step")
        parser.add_argument("--force", action="store_true", help="recompute vectors that already exist")
        parser.add_argument("--no-switch", action="store_true", help="embed, but leave search on the current model")
        parser.add_argument("--dry-run", action="store_true", help="only count what would be embedded")
        parser.add_argument("--passages", action="store_true",
                            help="only add the passages of long rows that have their own vector but none of them")

    def handle(self, *args: Any, **options: Any) -> None:
        model = options["model"] or embeddings.model_name()
        kinds = options["kind"] or searchable.kinds()
        unknown = [kind for kind in kinds if kind not in searchable.kinds()]
        if unknown:
            raise CommandError(f"unknown kind(s) {unknown}; registered: {searchable.kinds()}")
        if options["passages"]:
            self._passages(kinds, options["model"] or vectors.model_active().name, options["batch_size"],
                           options["dry_run"])
            return
        todo = {}
        for kind in kinds:
            spec = searchable.get(kind)
            queryset = spec.model._default_manager.all() if options["force"] else vectors.pending(kind=kind, model=model)
            todo[kind] = queryset
        counts = {kind: queryset.count() for kind, queryset in todo.items()}
        self.stdout.write(f"model {model}: {sum(counts.values())} rows to embed " + str(counts))
        if options["dry_run"]:
            return
        dims = embeddings.dimensions()
        try:
            for kind, queryset in todo.items():
                keys = vectors.keys_in_batch_order(kind=kind, rows=queryset)
                with tqdm(total=len(keys), desc=kind, unit="row") as bar:
                    for chunk in vectors.chunks(keys, options["batch_size"]):
                        vectors.embedding_store(kind=kind, ids=chunk, model=model, build_index=False,
                                                force=options["force"])
                        bar.update(len(chunk))
                # The HNSW index is built once after the load: far faster than growing it row by row.
                vectors.index_ensure(model=model, kind=kind, dimensions=dims)
        except EmbeddingError as exc:
            raise CommandError(f"embedding failed, search stays on the current model: {exc}") from exc
        if options["no_switch"]:
            self.stdout.write("done; search stays on " + vectors.model_active().name)
            return
        vectors.model_register(name=model, dimensions=dims, provider=embeddings.provider(model).name)
        vectors.model_activate(name=model)
        self.stdout.write(self.style.SUCCESS(f"search now uses {model}"))

    def _passages(self, kinds: list[str], model: str, batch_size: int, dry_run: bool) -> None:
        kinds = [kind for kind in kinds if searchable.get(kind).passages is not None]
        # Every row is read (vectors.passages_store skips those without a vector, short ones and those
        # that have their passages): once, after the upgrade.
        keys = {kind: vectors.keys_in_batch_order(kind=kind, rows=searchable.get(kind).model._default_manager.all())
                for kind in kinds}
        self.stdout.write(f"model {model}: {sum(len(k) for k in keys.values())} rows to read for passages "
                          + str({kind: len(found) for kind, found in keys.items()}))
        if dry_run:
            return
        stored = 0
        try:
            for kind, found in keys.items():
                with tqdm(total=len(found), desc=f"{kind} passages", unit="row") as bar:
                    for chunk in vectors.chunks(found, batch_size):
                        stored += vectors.passages_store(kind=kind, ids=chunk, model=model)
                        bar.update(len(chunk))
        except EmbeddingError as exc:
            raise CommandError(f"embedding failed after {stored} passage vectors (run again to go on): {exc}") from exc
        self.stdout.write(self.style.SUCCESS(f"{stored} passage vectors stored"))
