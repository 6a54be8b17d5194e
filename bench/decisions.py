""""What did we decide about X": is the decision the first thing recall shows?

Over the realistic coding corpus that bench/autorecall.py loads (same WINNI_DATA_DIR; run that
first), every fact a session stated (bench/realistic_content.py FACT_TEMPLATES: a port, a pinned
dependency, a job's retries, a dropped index, …; stated by the user "For the record: …" or in a
reply "Worth knowing: …", and asked about in other prompts) is asked three ways as a question
about a decision, in its project. "Decision first": the first item holds the statement (its
ticket id), for
- automatic recall (agents.autorecall: the block's first item, at 4,000 characters; "in the
  block" too; and how many of the blocks' items are tool calls),
- winni_recall / REST recall (core.recall.recall: the first hit),
- the admin's search page (core.recall_across.recall_by_kind: the first hit).
The facts are split in two fixed halves by their order (even: tuning, odd: checking); the three
phrasings of a fact stay in its half.

    .venv/bin/python bench/decisions.py [--realistic 3000]"""
from __future__ import annotations

import argparse
import re
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import _django  # noqa: E402

# A fact's question → the topic a decision about it names.
TOPICS = [
    (r"Which port does the (.+) staging database listen on\?", r"the port of the \1 staging database"),
    (r"Why is (.+) pinned in (.+)\?", r"pinning \1 in \2"),
    (r"Who owns the (.+) module of (.+)\?", r"who owns the \1 module of \2"),
    (r"How many times does the (.+) job retry\?", r"retries of the \1 job"),
    (r"Where are the feature flags of (.+) configured\?", r"where the feature flags of \1 are configured"),
    (r"Why is (.+) marked flaky\?", r"the flaky test \1"),
    (r"What is the rate limit of the (.+) public API\?", r"the rate limit of the \1 public API"),
    (r"Which command regenerates the (.+) API client\?", r"regenerating the \1 API client"),
    (r"What timeout does (.+) use\?", r"the timeout of \1"),
    (r"Why did we drop the index on (.+)\?", r"the index on \1"),
]
PHRASINGS = ["What did we decide about {topic}?", "What was the decision on {topic}?",
             "Remind me what we settled regarding {topic}."]


def topic_of(question: str) -> str:
    for pattern, topic in TOPICS:
        if re.fullmatch(pattern, question):
            return re.sub(pattern, topic, question)
    raise ValueError(f"no decision topic for {question!r}")


def holds(kind: str, key: str, ticket: str) -> bool:
    """The row of this hit or item states the fact (its ticket id is in its text)."""
    from core import searchable

    if kind not in searchable.kinds():  # a medallion's decision item, a cached answer
        return False
    spec = searchable.get(kind)
    row = spec.model.objects.filter(pk=key).first()
    return row is not None and ticket in (spec.text(row) or "")


def share(rows: list[dict[str, Any]], name: str) -> str:
    return f"{sum(row[name] for row in rows) / max(1, len(rows)) * 100:.1f} %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--realistic", type=int, default=3000, help="messages of the loaded realistic corpus")
    parser.add_argument("--question-share", type=float, nargs="*", default=[],
                        help="A/B: core.recall.QUESTION_SHARE values to measure (default: the setting)")
    parser.add_argument("--misses", action="store_true",
                        help="for each question whose decision is not first: what the block, winni_recall and "
                             "the admin search put first")
    args = parser.parse_args()
    _django.setup("autorecall", WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL="all-MiniLM-L6-v2")
    from agents import autorecall
    from bench.autorecall import realistic_facts
    from core.recall import recall
    from core.recall_across import recall_by_kind

    facts = realistic_facts(args.realistic)
    from core import recall as recall_module

    for share in args.question_share or [recall_module.QUESTION_SHARE]:
        recall_module.QUESTION_SHARE = share
        print(f"\nQUESTION_SHARE {share}")
        measure(facts, recall, recall_by_kind, autorecall, misses=args.misses)


def shown(kind: str, key: str) -> str:
    """One line of what an item is (a miss's first item, for --misses)."""
    from core import searchable

    if kind not in searchable.kinds():
        return kind
    spec = searchable.get(kind)
    row = spec.model.objects.filter(pk=key).first()
    if row is None:
        return f"{kind} (gone)"
    text = (spec.display(row) if spec.display else None) or spec.text(row) or ""
    return f"{kind} {spec.label(row)} [{len(spec.text(row) or '')} chars]: " + " ".join(text.split())[:160]


def measure(facts: list[Any], recall: Any, recall_by_kind: Any, autorecall: Any, misses: bool = False) -> None:
    rows: list[dict[str, Any]] = []
    for number, fact in enumerate(facts):
        for phrasing in PHRASINGS:
            question = phrasing.format(topic=topic_of(fact.question))
            found = autorecall.candidates_for(question, autorecall._project_of(fact.project),
                                              f"bench-{uuid.uuid4().hex}", None, gate=autorecall.GATE)
            ordered = autorecall.block_items(found)
            block = autorecall._block(ordered, found.weights, 4000, {}) if ordered else {"items": [], "text": ""}
            items = block["items"]
            in_block = [holds(item["kind"], item["id"], fact.ticket) for item in items]
            hits = recall(query=question, filters={"project": fact.project}, limit=10)["results"]
            admin = recall_by_kind(query=question, filters={"project": fact.project}, limit=20)["results"]
            rows.append({"half": "tuning" if number % 2 == 0 else "checking", "question": question,
                         "block_first": bool(in_block) and in_block[0], "block_any": any(in_block),
                         "block_top3": any(in_block[:3]),
                         "recall_first": bool(hits) and holds(hits[0]["kind"], hits[0]["id"], fact.ticket),
                         "admin_first": bool(admin) and holds(admin[0]["kind"], admin[0]["id"], fact.ticket),
                         "items": len(items), "chars": len(block["text"]),
                         "tool_items": sum(item["source"].get("role") == "tool" for item in items)})
            if misses and not (rows[-1]["block_first"] and rows[-1]["recall_first"] and rows[-1]["admin_first"]):
                print(f"MISS {rows[-1]['half']} {question} (ticket {fact.ticket})")
                if items and not rows[-1]["block_first"]:
                    where = f"#{in_block.index(True) + 1}" if any(in_block) else "not in the block"
                    print(f"  block first (the decision {where}): " + shown(items[0]["kind"], items[0]["id"]))
                if hits and not rows[-1]["recall_first"]:
                    at = next((n for n, hit in enumerate(hits) if holds(hit["kind"], hit["id"], fact.ticket)), None)
                    where = "not on the page" if at is None else f"#{at + 1}, {hits[at]['score']:.3f}"
                    print(f"  recall first ({hits[0]['score']:.3f}; the decision {where}): "
                          + shown(hits[0]["kind"], hits[0]["id"]))
                if admin and not rows[-1]["admin_first"]:
                    at = next((n for n, hit in enumerate(admin) if holds(hit["kind"], hit["id"], fact.ticket)), None)
                    where = "not on the page" if at is None else (
                        f"#{at + 1}, strength {admin[at]['strength']:.3f}, coverage {admin[at]['coverage']:.2f}")
                    print(f"  admin first (strength {admin[0]['strength']:.3f}, coverage {admin[0]['coverage']:.2f}; "
                          f"the decision {where}): " + shown(admin[0]["kind"], admin[0]["id"]))
    print(f"{len(rows)} questions over {len(facts)} stated facts")
    print("| half | questions | block: decision first | block: in the first 3 | block: anywhere "
          "| winni_recall first | admin search first |")
    print("|---|---|---|---|---|---|---|")
    for half in ("tuning", "checking", "all"):
        chosen = [row for row in rows if half == "all" or row["half"] == half]
        cells = " | ".join(share(chosen, name) for name in
                           ("block_first", "block_top3", "block_any", "recall_first", "admin_first"))
        print(f"| {half} | {len(chosen)} | {cells} |")
    blocks = [row for row in rows if row["items"]]
    print(f"{len(blocks)} blocks: {sum(row['items'] for row in blocks)} items, "
          f"{sum(row['tool_items'] for row in blocks)} of them tool calls; "
          f"{sum(row['chars'] for row in blocks) / max(1, len(blocks)):,.0f} characters a block")
    misses = [row["question"] for row in rows if not row["block_first"]]
    print("block, decision not first: " + "; ".join(misses[:15]))


if __name__ == "__main__":
    main()
