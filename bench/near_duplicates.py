"""Near-duplicate detection at write time (store_memory's `similar`), measured on a labelled set
written for this (bench/near_duplicate_pairs.jsonl, 228 pairs over 76 facts of a coding team and
its user: each fact with a paraphrase and an update of the same fact, both to be flagged, and a
related-but-different fact, not to be flagged).

Every pair's first text is stored as a memory of one project and embedded with the active model;
then each pair's second text is stored through the service store_memory uses
(memory.services.memory_remember) inside a transaction that is rolled back, and the pair counts as
flagged when `similar` names the first text. Reported: precision and recall at the configured
threshold (WINNI_MEMORY_SIMILAR_THRESHOLD) and at a sweep of thresholds, recall per kind, how often
another stored fact was flagged as well, and the latency of a store with the check (p50/p95).

    .venv/bin/python bench/near_duplicates.py
    .venv/bin/python bench/near_duplicates.py --pairs other.jsonl

Data dir: WINNI_DATA_DIR (default /tmp/winni-bench-near-duplicates); its memories are replaced."""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = str(Path(__file__).resolve().parent)
sys.path.insert(0, BENCH)
import _django  # noqa: E402

# bench/secrets.py would shadow the standard library's secrets module (Django and torch import it).
sys.path[:] = [entry for entry in sys.path if entry not in (BENCH, "")]

PAIRS = Path(__file__).with_name("near_duplicate_pairs.jsonl")
SWEEP = (0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75)
FLOOR = 0.3  # the sweep needs each pair's similarity down to here


class Rollback(Exception):
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    args = parser.parse_args()
    _django.setup("near-duplicates")
    from django.conf import settings
    from django.db import transaction
    from tqdm import tqdm

    from core.projects import project_create, project_find
    from memory import embeddings, services, vectors
    from memory.models import Embedding, Memory

    pairs = [json.loads(line) for line in args.pairs.read_text().splitlines() if line.strip()]
    chosen = settings.WINNI_MEMORY_SIMILAR_THRESHOLD
    Embedding.objects.filter(kind="memory").delete()
    Memory.objects.all().delete()
    project = project_find("near-duplicates") or project_create(name="near-duplicates")
    stored: dict[str, Any] = {}
    for pair in pairs:
        if pair["a"] not in stored:
            stored[pair["a"]] = services.memory_store(content=pair["a"], project=project.name)[0].pk
    _django.embed_pending("memory")
    print(f"model {embeddings.model_name()} (search uses {vectors.model_active().name}); {len(stored)} facts stored, "
          f"{len(pairs)} pairs; threshold {chosen}")

    settings.WINNI_MEMORY_SIMILAR_THRESHOLD = FLOOR
    rows, latencies = [], []
    for pair in tqdm(pairs, desc="storing the second texts", unit="pair"):
        started = time.perf_counter()
        try:
            with transaction.atomic():
                _, created, similar = services.memory_remember(content=pair["b"], project=project.name)
                raise Rollback
        except Rollback:
            pass
        latencies.append((time.perf_counter() - started) * 1000)
        assert created, pair["b"]
        own = next((item.similarity for item in similar if item.memory.pk == stored[pair["a"]]), None)
        others = [item.similarity for item in similar if item.memory.pk != stored[pair["a"]]]
        rows.append({**pair, "own": own, "others": others})

    def score(threshold: float) -> dict[str, Any]:
        flagged = [row["own"] is not None and row["own"] >= threshold for row in rows]
        tp = sum(1 for row, hit in zip(rows, flagged) if hit and row["similar"])
        fp = sum(1 for row, hit in zip(rows, flagged) if hit and not row["similar"])
        positives = sum(1 for row in rows if row["similar"])
        by_kind = Counter(row["kind"] for row, hit in zip(rows, flagged) if hit)
        extra = sum(1 for row in rows if any(sim >= threshold for sim in row["others"]))
        return {"precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / positives, "by_kind": by_kind,
                "extra": extra}

    kinds = Counter(row["kind"] for row in rows)
    print(f"\n{'threshold':>9}  precision  recall  " + "  ".join(f"{kind:>10}" for kind in sorted(kinds))
          + "  stores flagging another fact")
    for threshold in sorted({*SWEEP, chosen}):
        result = score(threshold)
        mark = " ← configured" if threshold == chosen else ""
        print(f"{threshold:>9.2f}  {result['precision']:>9.3f}  {result['recall']:>6.3f}  "
              + "  ".join(f"{result['by_kind'][kind] / kinds[kind]:>10.3f}" for kind in sorted(kinds))
              + f"  {result['extra']:>4} of {len(rows)}{mark}")
    p50, p95 = _django.percentiles(latencies)
    print(f"\nstore with the similar check: p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
          f"{len(latencies) / (sum(latencies) / 1000):.1f} stores/s (one process, rolled back)")
    print("per-kind columns: share of that kind's pairs flagged (paraphrase and update should be, related not)")


if __name__ == "__main__":
    main()
