"""Progressive disclosure: the tokens an agent reads to reach a LoCoMo question's evidence through
MCP, with today's search pages against compact rows and a get.

The LoCoMo dev file is ingested as bench/retrieval.py does (its ingest, one session scope per
conversation, vectors computed in process). Each question is asked through the tools themselves
(core.mcp.strict_tool: the text an MCP client receives, which is what Claude Code's model reads;
≈ 4 characters a token), within its conversation's scope and as of the last session's date:

- `dewey_search` page: the tool's default page (20 hits, two turns either side);
- `winni_recall` full page (detail=full, limit 10), what it answered before rows were compact;
- `winni_recall` compact rows (limit 10), then `winni_get` of the rows in rank order until an
  evidence turn has been read (an agent reading the index and opening the likeliest row first;
  rank order stands in for its choice), or of all ten when none holds evidence: the same rows as
  the full page, so the same recall; and the same with a get only of rows whose line was cut
  (a row whose line is its whole text needs none);
- compact rows, then a get of the first three rows, whatever they hold: its own recall.

"Found": an evidence turn is among what the agent read (a hit or, in dewey_search, a turn around
one).

    .venv/bin/python bench/disclosure.py [--limit N] [--fresh]"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django  # noqa: E402
import retrieval  # noqa: E402

LIMIT = 10
FIXED_GETS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=retrieval.DATA / "locomo_dev.json.gz")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--fresh", action="store_true", help="ingest again even when the scope exists")
    args = parser.parse_args()
    _django.setup("disclosure", WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL="all-MiniLM-L6-v2")
    from tqdm import tqdm

    from conversations.mcp import dewey_search
    from conversations.models import Message
    from core.mcp import strict_tool
    from core.searchable import searchable_changed
    from winni_site.recall import winni_get, winni_recall

    searchable_changed.disconnect(dispatch_uid="memory.embed_on_change")
    client = _django.rest_client()
    _, scopes = retrieval.load(args.data, args.limit)
    mappings = {scope.name: retrieval.ingest(client, scope, args.fresh) for scope in tqdm(scopes, desc="ingest")}
    _django.embed_pending("message", scope=Message.objects.filter(
        conversation__session_id__in=[scope.name for scope in scopes]))
    tools = {fn.__name__: strict_tool(fn) for fn in (dewey_search, winni_recall, winni_get)}

    def call(name: str, **arguments: Any) -> tuple[int, Any]:
        tool = tools[name]
        result = tool.fn(**tool.fn_metadata.validate_arguments(arguments))
        assert not result.is_error, result
        text = "".join(block.text for block in result.content)
        return len(text), json.loads(text)

    costs: dict[str, list[int]] = {name: [] for name in (
        "dewey_search page", "winni_recall full page", "compact + get until found",
        "compact + get of cut rows until found", f"compact + get of the first {FIXED_GETS}")}
    found: dict[str, list[bool]] = {name: [] for name in costs}
    asked = sum(len(scope.questions) for scope in scopes)
    with tqdm(total=asked, desc="questions", unit="q") as bar:
        for scope in scopes:
            mapping = mappings[scope.name]

            def key(hit: dict[str, Any], mapping: dict = mapping) -> str:
                return mapping[(hit["conversation_id"], hit["turn"])]

            for question in scope.questions:
                common = {"query": question.text, "session_id": scope.name, "as_of": question.as_of}
                size, page = call("dewey_search", **common)
                seen = {mapping[(hit["conversation_id"], turn["turn"])]
                        for hit in page["results"] for turn in hit["context"]}
                seen |= {key(hit) for hit in page["results"]}
                costs["dewey_search page"].append(size)
                found["dewey_search page"].append(bool(seen & question.turns))

                common |= {"kinds": ["message"], "limit": LIMIT}
                size, page = call("winni_recall", detail="full", **common)
                costs["winni_recall full page"].append(size)
                found["winni_recall full page"].append(any(key(hit) in question.turns for hit in page["results"]))

                index_size, index = call("winni_recall", **common)
                rows = index["results"]
                opened = [call("winni_get", kind=row["kind"], id=row["id"]) for row in rows]
                gets = [size for size, _ in opened]
                holds = [key(item) in question.turns for _, item in opened]
                cut = [row["line"] != " ".join(item["text"].split()) for row, (_, item) in zip(rows, opened)]
                upto = holds.index(True) + 1 if any(holds) else len(rows)
                costs["compact + get until found"].append(index_size + sum(gets[:upto]))
                costs["compact + get of cut rows until found"].append(
                    index_size + sum(size for size, was_cut in zip(gets[:upto], cut[:upto]) if was_cut))
                costs[f"compact + get of the first {FIXED_GETS}"].append(index_size + sum(gets[:FIXED_GETS]))
                for name in ("compact + get until found", "compact + get of cut rows until found"):
                    found[name].append(any(holds))
                found[f"compact + get of the first {FIXED_GETS}"].append(any(holds[:FIXED_GETS]))
                bar.update(1)

    print(f"\nLoCoMo dev, {asked} questions, hybrid, each within its conversation; characters the agent reads "
          "(≈ tokens: / 4)")
    print("| how the agent reads | evidence read | characters: mean / median | ≈ tokens, mean |")
    print("|---|---|---|---|")
    for name, sizes in costs.items():
        print(f"| {name} | {100 * sum(found[name]) / len(found[name]):.1f} % | "
              f"{statistics.mean(sizes):,.0f} / {statistics.median(sizes):,.0f} | {statistics.mean(sizes) / 4:,.0f} |")


if __name__ == "__main__":
    main()
