"""Automatic recall with and without the use prior (agents/use.py `prior_for`, issue #48.4).

A benchmark store has no use history, so one is made the way a user's sessions make it: LoCoMo
dev is loaded as bench/autorecall.py loads it (one project per conversation, every session captured
through the capture path), then the *tuning* half of its questions (the even-numbered ones) is
asked as new prompts: each block is recorded as an injection, and each of its items judged by
agents.use.judge against a simulated reply, the question's gold answer (what an agent that had the
answer would say). Then the *checking* half (odd-numbered) is asked, and its blocks built with the
prior on and off from the same candidates: LoCoMo evidence in the block (any / all), evidence among
the block's first 3 items, the share of questions that got a block; silence on the generic prompts
and unanswerable questions (bench/autorecall.py's held-out sets), asked after the replay too.

The prior's two constants (agents.use.PRIOR_STRENGTH, PRIOR_IGNORED_MIN) are chosen first inside
the tuning half: its even questions replayed, its odd ones asked; the checking half is read once,
with the chosen pair.

    .venv/bin/python bench/use_prior.py [--budget 4000]

The corpus stays in WINNI_DATA_DIR (default /tmp/winni-bench-use-prior) and is reused; the replayed
history is written again on every run."""
from __future__ import annotations

import argparse
import gzip
import itertools
import json
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))
from bench import _django  # noqa: E402
from bench import autorecall as autorecall_bench  # noqa: E402
from bench import retrieval as retrieval_bench  # noqa: E402


def gold_answers() -> dict[tuple[str, str], str]:
    """(LoCoMo sample id, question) → its gold answer."""
    with gzip.open(autorecall_bench.DATA / "locomo_dev.json.gz", "rt") as handle:
        items = json.load(handle)
    return {(item["sample_id"], qa["question"]): str(qa.get("answer", "")) for item in items for qa in item["qa"]}


def replay(asked: list[tuple[Any, str]], budget: int) -> tuple[int, int]:
    """Ask each (question, gold answer) as a new prompt, record its block as an injection and
    judge its items against the answer as the agent's reply. Returns (items judged, used)."""
    from agents import autorecall, use
    from agents.models import Injection
    from core.models import ItemUse

    judged = used = 0
    for one, answer in asked:
        project = autorecall._project_of(one.project)
        session = f"bench-replay-{uuid.uuid4().hex}"
        found = autorecall.candidates_for(one.prompt, project, session, autorecall.time_plan(one.prompt, one.as_of))
        ordered = autorecall.block_items(found)
        if not ordered:
            continue
        result = autorecall._block(ordered, found.weights, budget, {"terms": found.terms[:12]},
                                   order=autorecall.prior_order(found))
        if not result["items"]:
            continue
        injection = Injection.objects.create(
            session_id=session, trigger=Injection.Trigger.PROMPT, project=project, text=result["text"],
            items=result["items"], item_keys=[f"{i['kind']}:{i['id']}" for i in result["items"]], gate=result["gate"])
        lines = use._item_lines(injection)
        rows = []
        for index, item in enumerate(result["items"]):
            is_used, evidence = use.judge(item_text=lines[index] if index < len(lines) else "",
                                          ids=use.item_ids(item), prompt=one.prompt,
                                          following=[use.Turn("assistant", answer)])
            rows.append(ItemUse(injection_id=injection.pk, item_key=f"{item['kind']}:{item['id']}",
                                kind=item["kind"], project=project, used=is_used, evidence=evidence,
                                terms=found.terms[:12]))
            judged += 1
            used += is_used
        ItemUse.objects.bulk_create(rows)
    return judged, used


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=4000, help="the block's characters")
    parser.add_argument("--load-only", action="store_true", help="load the store and stop")
    args = parser.parse_args()
    _django.setup("use-prior", WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL="all-MiniLM-L6-v2")
    from django.db import connection
    from tqdm import tqdm

    from agents import autorecall, use
    from agents.models import Injection
    from core.models import ItemUse
    from core.searchable import searchable_changed

    searchable_changed.disconnect(dispatch_uid="memory.embed_on_change")
    started = time.perf_counter()
    _, locomo = retrieval_bench.load(autorecall_bench.DATA / "locomo_dev.json.gz", None)
    mappings = {scope.name: autorecall_bench.capture_scope(scope, autorecall_bench.slug_of(scope.name))
                for scope in tqdm(locomo, desc="capture", unit="scope")}
    _django.embed_pending("message")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_message")
    print(f"LoCoMo store loaded in {time.perf_counter() - started:.0f} s")
    if args.load_only:
        return
    answers = gold_answers()
    Asked = autorecall_bench.Asked
    questions = [(Asked(q.text, autorecall_bench.slug_of(s.name), q.turns, q.sessions, mappings[s.name], q.as_of),
                  answers.get((s.name.split(":", 1)[1], q.text), ""))
                 for s in locomo for q in s.questions]
    tuning, checking = questions[0::2], questions[1::2]
    unanswerable = [Asked(q.text, autorecall_bench.slug_of(locomo[(i + 1) % len(locomo)].name), set(), set(), {})
                    for i, s in enumerate(locomo) for q in s.questions]
    random.Random(7).shuffle(unanswerable)
    silence_sets = {
        "generic (held out)": [Asked(p, None, set(), set(), {})
                               for p in autorecall_bench.prompts_of(autorecall_bench.GENERIC_TEST)],
        "generic in a LoCoMo project": [Asked(p, autorecall_bench.slug_of(locomo[0].name), set(), set(), {})
                                        for p in autorecall_bench.prompts_of(autorecall_bench.GENERIC_TEST)],
        "unanswerable (held out)": unanswerable[:200][1::2],
    }

    def gather(asked: list[Any]) -> list[Any]:
        return [autorecall.candidates_for(a.prompt, autorecall._project_of(a.project), f"bench-{uuid.uuid4().hex}",
                                          autorecall.time_plan(a.prompt, a.as_of)) for a in tqdm(asked, unit="q")]

    def history(asked: list[tuple[Any, str]], label: str) -> None:
        Injection.objects.all().delete()
        ItemUse.objects.all().delete()
        began = time.perf_counter()
        judged, used = replay(tqdm(asked, desc=f"replay ({label})", unit="q"), args.budget)  # type: ignore[arg-type]
        print(f"replayed {len(asked)} questions ({label}): {judged} items judged, {used} used "
              f"({time.perf_counter() - began:.0f} s)")

    def measure(asked: list[tuple[Any, str]], found: list[Any], prior_on: bool) -> tuple[float, ...]:
        """(evidence any, all, among the first 3, opened, blocks reordered) over `asked`, in %."""
        any_hits = all_hits = first3 = opened = moved = 0
        for (one, _), f in zip(asked, found):
            ordered = autorecall.block_items(f)
            order = autorecall.prior_order(f) if prior_on else None
            items = autorecall._block(ordered, f.weights, args.budget, {}, order=order)["items"] if ordered else []
            moved += bool(order) and order != [c.key for c in ordered]
            keys = set(autorecall_bench.keys_of(items, one.mapping))
            any_hits += bool(keys & one.gold_turns)
            all_hits += one.gold_turns <= keys
            first3 += bool(autorecall_bench.first_keys(items, one.mapping) & one.gold_turns)
            opened += bool(items)
        n = len(asked) / 100
        return any_hits / n, all_hits / n, first3 / n, opened / n, moved

    def reprior(asked: list[tuple[Any, str]], found: list[Any]) -> None:
        for (one, _), f in zip(asked, found):
            project = autorecall._project_of(one.project)
            f.prior = use.prior_for(keys=[c.key for c in f.medallion_items + f.recalled], terms=f.terms,
                                    project_id=project.pk if project else None)

    # The prior's two constants are chosen inside the tuning half (its first half replayed, its
    # second asked), never on the checking half.
    inner_history, inner_check = tuning[0::2], tuning[1::2]
    history(inner_history, "choosing: a quarter")
    inner_found = gather([a for a, _ in inner_check])
    base = measure(inner_check, inner_found, prior_on=False)
    print(f"\nchoosing on {len(inner_check)} tuning questions: prior off any {base[0]:.1f} % all {base[1]:.1f} % "
          f"first 3 {base[2]:.1f} %")
    print("| strength | ignored at least | any | all | first 3 | reordered |\n|---|---|---|---|---|---|")
    chosen = (use.PRIOR_STRENGTH, use.PRIOR_IGNORED_MIN)
    best = None
    for strength, ignored_min in itertools.product((0.1, 0.2, 0.3), (1, 2, 3)):
        use.PRIOR_STRENGTH, use.PRIOR_IGNORED_MIN = strength, ignored_min
        reprior(inner_check, inner_found)
        row = measure(inner_check, inner_found, prior_on=True)
        print(f"| {strength} | {ignored_min} | {row[0]:.1f} % | {row[1]:.1f} % | {row[2]:.1f} % | {row[4]} |")
        # The most evidence among the first 3 (what the block holds does not move: prior_order).
        if row[0] >= base[0] and row[1] >= base[1] and (best is None or row[2] > best[0][2]):
            best = (row, (strength, ignored_min))
    use.PRIOR_STRENGTH, use.PRIOR_IGNORED_MIN = best[1] if best else chosen
    print(f"chosen: strength {use.PRIOR_STRENGTH}, ignored at least {use.PRIOR_IGNORED_MIN} "
          f"({'the defaults: none was no worse' if best is None else 'the most evidence among the first 3'})")

    history(tuning, "the tuning half")
    found = gather([a for a, _ in checking])
    print(f"checking half: {len(checking)} questions, {sum(bool(f.prior) for f in found)} with a prior on some "
          f"candidate")
    rows = [(label, measure(checking, found, prior_on=on)) for label, on in (("off", False), ("on", True))]
    # What the prior's one query costs a prompt (the checking half's candidates, this history).
    took = []
    for (one, _), f in zip(checking, found):
        project = autorecall._project_of(one.project)
        began = time.perf_counter()
        use.prior_for(keys=[c.key for c in f.medallion_items + f.recalled], terms=f.terms,
                      project_id=project.pk if project else None)
        took.append((time.perf_counter() - began) * 1000)
    p50, p95 = _django.percentiles(took)
    plan = " / ".join(line.strip() for line in ItemUse.objects.filter(
        item_key__in=[c.key for c in found[0].recalled][:20], project_id=autorecall._project_of(checking[0][0].project).pk)
        .order_by("-judged_at").values_list("item_key", "used", "terms")[:400].explain().splitlines()[:3])
    print(f"prior_for: p50 {p50:.2f} ms, p95 {p95:.2f} ms over {len(took)} prompts, {ItemUse.objects.count()} "
          f"judgments stored; plan: {plan}")
    silence = {}
    for name, asked in silence_sets.items():
        sets = gather(asked)
        silence[name] = [sum(bool(autorecall.block_items(f, prior=f.prior if on else {})) for f in sets)
                         / len(sets) * 100 for on in (False, True)]
    print(f"\n| prior | LoCoMo evidence any / all ({len(checking)} checking questions) | evidence among the first 3 "
          f"| opened | blocks reordered |")
    print("|---|---|---|---|---|")
    for label, row in rows:
        print(f"| {label} | {row[0]:.1f} % / {row[1]:.1f} % | {row[2]:.1f} % | {row[3]:.1f} % | "
              f"{row[4] if label == 'on' else ''} |")
    print("\n| silence set | off | on |\n|---|---|---|")
    for name, (off, on) in silence.items():
        print(f"| {name} ({len(silence_sets[name])}) | {off:.1f} % | {on:.1f} % |")

if __name__ == "__main__":
    main()
