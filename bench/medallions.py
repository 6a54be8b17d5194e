"""Medallion benchmark: the extractive provider's validity and speed on 200 generated evidence
inputs (empty and huge included), scope queries over a few thousand medallions, and a whole
checkpoint (extract + validate + write with a revision).

    .venv/bin/python bench/medallions.py [--medallions 2000]

Runs against a throw-away embedded PostgreSQL (the test settings) unless DATABASE_URL is set."""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.test")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from tqdm import tqdm  # noqa: E402

from medallions import extractive, services  # noqa: E402
from tests.medallion_support import WORDS, generated_evidence  # noqa: E402


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"


def bench_extractive() -> None:
    provider = extractive.ExtractiveLLM()
    inputs = generated_evidence(200)
    valid, times = 0, []
    for evidence in tqdm(inputs, desc="extractive", unit="input"):
        material = services.evidence_for_llm(services.validate_evidence(evidence))
        started = time.perf_counter()
        content = provider.generate({"graph_nodes": ["repo:bench"], "tags": []}, material)
        times.append(time.perf_counter() - started)
        try:
            services.validate_document({**content.model_dump(mode="json"), "scope": {"graph_nodes": ["repo:bench"]}})
            valid += 1
        except Exception as exc:  # noqa: BLE001 - counted as invalid
            print("invalid:", exc)
    sizes = sorted(len(str(e)) for e in inputs)
    print(f"extractive provider: {valid}/{len(inputs)} valid ({valid / len(inputs):.0%}); inputs "
          f"{sizes[0]} B to {sizes[-1] / 1e6:.1f} MB; generate {percentiles(times)}")


def bench_store(count: int) -> None:
    rng = random.Random(7)
    repos = [f"repo:r{i}" for i in range(count // 10)]
    modules = [f"module:m{i}" for i in range(20)]
    tags = ["project_state", "sprint_1", "sprint_2", "refactor", "bugs"]
    started = time.perf_counter()
    for _ in tqdm(range(count), desc="create", unit="medallion"):
        scope = {"graph_nodes": [rng.choice(repos), *rng.sample(modules, rng.randint(0, 3))],
                 "tags": rng.sample(tags, rng.randint(0, 2))}
        services.medallion_create(document={
            "scope": scope,
            "summary": {"high_level": " ".join(rng.choice(WORDS) for _ in range(40))},
            "decisions": [{"id": f"D-{n:03d}", "statement": " ".join(rng.choice(WORDS) for _ in range(12)),
                           "confidence": 0.7} for n in range(5)],
        })
    elapsed = time.perf_counter() - started
    print(f"create: {count} medallions in {elapsed:.1f} s ({count / elapsed:.0f}/s)")
    times = []
    for _ in tqdm(range(300), desc="latest_for_scope", unit="query"):
        scope = rng.choice([
            {"graph_nodes": [rng.choice(repos)], "tags": []},
            {"graph_nodes": [rng.choice(repos), rng.choice(modules)], "tags": []},
            {"graph_nodes": [], "tags": [rng.choice(tags)]},
            {"graph_nodes": [rng.choice(modules)], "tags": [rng.choice(tags)]},
        ])
        started = time.perf_counter()
        services.medallions_latest_for_scope(scope=scope, limit=3)
        times.append(time.perf_counter() - started)
    print(f"medallions_latest_for_scope (limit 3, {count} stored): {percentiles(times)}")


def bench_checkpoint() -> None:
    inputs = [e for e in generated_evidence(60, seed=11)[15:]]  # ordinary sessions, not the extremes
    times = []
    for index, evidence in enumerate(tqdm(inputs, desc="checkpoint_session", unit="checkpoint")):
        scope = {"graph_nodes": [f"repo:checkpoint{index % 5}"], "tags": []}
        clean = services.validate_evidence(evidence)
        started = time.perf_counter()
        services.checkpoint_session(scope=scope, evidence=clean, actor="bench")
        times.append(time.perf_counter() - started)
    print(f"checkpoint_session (extractive, generate or update + revision): {percentiles(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--medallions", type=int, default=2000)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    bench_extractive()
    bench_store(args.medallions)
    bench_checkpoint()


if __name__ == "__main__":
    main()
