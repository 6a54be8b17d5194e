"""What an agent reads from one `dewey_search` page through MCP: the answer's text, what Claude
Code gives its model (the `structuredContent` as compact JSON when the tool sends one, else the
text; Claude Code keeps a tool result over 50,000 characters out of the conversation and refuses
one over 25,000 tokens), the JSON-RPC response's size, the messages' content in it, and what the
SDK's conversion of the answer costs. The tool itself is called in process (core.mcp.strict_tool,
then the SDK's own conversion), on the realistic corpus that bench/memory.py leaves in
WINNI_DATA_DIR (--corpus realistic), hybrid mode, the bench's questions (bench/realistic.py's
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
    from realistic import RealisticCorpus, project_queries
    from tqdm import tqdm

    from conversations.mcp import dewey_search
    from core.mcp import strict_tool

    tool = strict_tool(dewey_search)
    corpus = RealisticCorpus(conversations=max(1, args.messages // 10), messages=args.messages, seed=0)
    asked = project_queries(corpus, args.questions + 10)[: args.questions]
    texts, model_reads, wire, contents, converting = [], [], [], [], []
    for _, text, about in tqdm(asked, desc="pages", unit="page"):
        arguments = {"query": text, "mode": "hybrid", **({"project": about.name} if args.project and about else {})}
        answer = tool.fn(**tool.fn_metadata.validate_arguments(arguments))
        started = time.perf_counter()
        result = tool.fn_metadata.convert_result(answer)
        response = result.model_dump_json(by_alias=True, exclude_none=True)
        converting.append((time.perf_counter() - started) * 1000)
        wire.append(len(response))
        text_of = "".join(block.text for block in result.content)
        texts.append(len(text_of))
        page = result.structured_content or json.loads(text_of)
        model_reads.append(len(json.dumps(page, ensure_ascii=False, separators=(",", ":")))
                           if result.structured_content else len(text_of))
        contents.append(sum(len(hit["content"]) + sum(len(turn["content"]) for turn in hit["context"])
                            for hit in page["results"]))

    def spread(values: list[float]) -> str:
        p50, p95 = _django.percentiles(values)
        return f"p50 {p50:,.0f}, p95 {p95:,.0f}, max {max(values):,.0f}"

    print(f"dewey_search pages through MCP ({len(asked)} questions{', project filter' if args.project else ''}):")
    print(f"  the answer's text: {spread(texts)} characters")
    print(f"  what Claude Code's model reads: {spread(model_reads)} characters "
          f"(≈ {statistics.median(model_reads) / 4:,.0f} tokens at the median); "
          f"over 50,000: {sum(v > 50_000 for v in model_reads)}")
    print(f"  the JSON-RPC result: {spread(wire)} characters")
    print(f"  messages' content characters: {spread(contents)}")
    p50, p95 = _django.percentiles(converting)
    print(f"  the SDK's conversion and the result's JSON: p50 {p50:.2f} ms, p95 {p95:.2f} ms")


if __name__ == "__main__":
    main()
