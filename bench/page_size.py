"""What an agent reads from one `dewey_search` page: the page's JSON in characters as the REST API
writes it and as MCP sends it (indented: Claude Code keeps a tool result over 50,000 characters
out of the conversation, and refuses one over 25,000 tokens), the messages' content in it, and
what making the page costs, on the realistic corpus that bench/memory.py leaves in WINNI_DATA_DIR
(--corpus realistic). In process, hybrid mode, the bench's questions (bench/realistic.py's
project_queries), default page: 20 hits, two turns either side.

    .venv/bin/python bench/page_size.py
    .venv/bin/python bench/page_size.py --questions 100 --project   # each question within its project

Run it on two trees against the same store to compare code."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000, help="the size the corpus was built with")
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--project", action="store_true", help="each question with its project's filter")
    args = parser.parse_args()
    _django.setup("memory")
    import pydantic_core
    from realistic import RealisticCorpus, project_queries
    from tqdm import tqdm

    from conversations import outputs, services

    corpus = RealisticCorpus(conversations=max(1, args.messages // 10), messages=args.messages, seed=0)
    asked = project_queries(corpus, args.questions + 10)[: args.questions]
    rest, mcp, contents, made = [], [], [], []
    for _, text, about in tqdm(asked, desc="pages", unit="page"):
        page = services.message_search(query=text, mode="hybrid",
                                       **({"project": about.name} if args.project and about else {}))
        started = time.perf_counter()
        out = outputs.search_page_dict(page)
        made.append((time.perf_counter() - started) * 1000)
        rest.append(len(json.dumps(out, ensure_ascii=False, separators=(",", ":"))))
        mcp.append(len(pydantic_core.to_json(out, fallback=str, indent=2).decode()))  # the SDK's text form
        contents.append(sum(len(hit["content"]) + sum(len(turn["content"]) for turn in hit["context"])
                            for hit in out["results"]))

    def spread(values: list[float]) -> str:
        p50, p95 = _django.percentiles(values)
        return f"p50 {p50:,.0f}, p95 {p95:,.0f}, max {max(values):,.0f}"

    print(f"dewey_search pages ({len(asked)} questions{', project filter' if args.project else ''}):")
    print(f"  JSON characters, REST (compact): {spread(rest)}")
    print(f"  JSON characters, MCP text (indented): {spread(mcp)}; over 50,000: {sum(v > 50_000 for v in mcp)}")
    print(f"  messages' content characters: {spread(contents)}")
    p50, p95 = _django.percentiles(made)
    print(f"  making the page's JSON shape: p50 {p50:.2f} ms, p95 {p95:.2f} ms, {1000 / statistics.mean(made):.0f} pages/s")


if __name__ == "__main__":
    main()
