"""Scrubbing in the capture path: the time it adds to a captured event, and what it redacts in
ordinary text, measured through `agents.capture.capture_hook_event` (what POST
/api/v1/capture/events runs) against a real database.

    .venv/bin/python bench/capture_scrub.py [--events-2k 500] [--events-20k 150] [--locomo 0] [--source 0]

1. Cost: PostToolUse events whose tool output is ~2 KB or ~20 KB of ordinary tool output (source
   slices, pytest and git output, JSON listings; 30 % carry planted secrets), each stored through
   the capture service. The added time is the time spent in `core.redaction`'s scrubbing during
   that event (all its calls: the tool text before the cut, the metadata, the conversations
   service's check), per event, wall clock and this thread's CPU; the whole event's time with
   WINNI_SCRUB on and off is printed beside it.
2. False positives: every LoCoMo chat turn as a prompt (UserPromptSubmit), and every tracked text
   file of this repository (*.py *.md *.html *.txt *.yml) as the output of `cat FILE` (PostToolUse,
   cut in 16 KB pieces): every redaction is listed (masked). `--locomo N` / `--source N` take only
   the first N (0: all).

Runs on its own embedded PostgreSQL in WINNI_DATA_DIR (default /tmp/winni-bench-capture-scrub).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench import _django  # noqa: E402

PIECE = 16_000


class Timer:
    """Wraps core.redaction's `scrub`: the time and the redactions of the calls since `reset`."""

    def __init__(self, scrub, find_secrets, mask) -> None:  # type: ignore[no-untyped-def]
        self.scrub, self.find, self.mask = scrub, find_secrets, mask
        self.wall = self.cpu = 0.0
        self.found: list[str] = []
        self.where = ""

    def reset(self, where: str = "") -> None:
        self.wall = self.cpu = 0.0
        self.found = []
        self.where = where

    def __call__(self, text, *, enabled=True):  # type: ignore[no-untyped-def]
        wall, cpu = time.perf_counter(), time.thread_time()
        result = self.scrub(text, enabled=enabled)
        self.wall += time.perf_counter() - wall
        self.cpu += time.thread_time() - cpu
        if result.counts:
            for start, end, kind in self.find(text):
                self.found.append(f"{self.where}  {kind}  {self.mask(text[start:end])}")
        return result


def capture_event(capture, session: str, event: str, **fields) -> None:  # type: ignore[no-untyped-def]
    payload = {"session_id": session, "cwd": "/bench/capture-scrub", "hook_event_name": event, **fields}
    capture.capture_hook_event(payload=payload, event_id=uuid.uuid4().hex)


def cost(capture, timer, settings, events_2k: int, events_20k: int) -> None:  # type: ignore[no-untyped-def]
    from bench.scrub_secrets import events
    from bench.secret_corpus import percentile, planted_documents

    rng = random.Random(7)
    planted = [d.text for d in planted_documents(seed=99, per_format=3)]
    print("\n## Added time per captured event (scrubbing inside capture_hook_event; ms)")
    print("| event | n | added wall p50 / p95 | added CPU p50 / p95 | whole event p50 / p95, WINNI_SCRUB on | off | target p95 |")
    print("|---|---|---|---|---|---|---|")
    for size, count, target in ((2_000, events_2k, 1.0), (20_000, events_20k, 5.0)):
        batch = events(rng, size, count, planted)
        session = f"cost-{size}-{uuid.uuid4().hex[:6]}"
        whole: dict[bool, list[float]] = {True: [], False: []}
        added_wall, added_cpu = [], []
        # Alternately on and off, so the load of the moment weighs on both alike.
        for index, text in enumerate(t for t in batch for _ in (0, 1)):
            on = index % 2 == 0
            settings.WINNI_SCRUB = on
            timer.reset()
            started = time.perf_counter()
            capture_event(capture, session, "PostToolUse", tool_name="Bash", tool_input={"command": "make test"},
                          tool_response={"stdout": text})
            whole[on].append((time.perf_counter() - started) * 1000)
            if on:
                added_wall.append(timer.wall * 1000)
                added_cpu.append(timer.cpu * 1000)
        settings.WINNI_SCRUB = True
        p = lambda values, q: percentile(values[10:], q)  # noqa: E731 - the first events warm up
        print(f"| {size // 1000} KB | {count} | {p(added_wall, .5):.3f} / {p(added_wall, .95):.3f} | "
              f"{p(added_cpu, .5):.3f} / {p(added_cpu, .95):.3f} | {p(whole[True], .5):.2f} / {p(whole[True], .95):.2f} | "
              f"{p(whole[False], .5):.2f} / {p(whole[False], .95):.2f} | ≤ {target} |")


def false_positives(capture, timer, locomo: int, source: int) -> None:  # type: ignore[no-untyped-def]
    from tqdm import tqdm

    from bench.scrub_secrets import locomo_turns, source_files

    print("\n## False positives in the capture path (every redaction in ordinary text)")
    total_lines = total_found = 0
    turns = locomo_turns()[: locomo or None]
    files = source_files()[: source or None]
    corpora = {
        "LoCoMo chat turns (prompts)": [(where, text, "prompt") for where, text in turns],
        "Winni source tree (cat FILE)": [(f"{name}#{i // PIECE}", text[i:i + PIECE], "tool")
                                         for name, text in files for i in range(0, max(len(text), 1), PIECE)],
    }
    for label, items in corpora.items():
        session = f"fp-{uuid.uuid4().hex[:6]}"
        lines, found = 0, []
        for where, text, how in tqdm(items, desc=label):
            if not text.strip():
                continue
            lines += text.count("\n") + 1
            timer.reset(where)
            if how == "prompt":
                capture_event(capture, session, "UserPromptSubmit", prompt=text)
            else:
                capture_event(capture, session, "PostToolUse", tool_name="Bash",
                              tool_input={"command": f"cat {where.split('#')[0]}"}, tool_response={"stdout": text})
            found += timer.found
        total_lines, total_found = total_lines + lines, total_found + len(found)
        print(f"{label}: {len(found)} redactions in {lines} lines = {10000 * len(found) / max(lines, 1):.2f} "
              "per 10,000 lines")
        for item in found:
            print("   ", item)
    print(f"OVERALL: {total_found} in {total_lines} lines = {10000 * total_found / max(total_lines, 1):.2f} "
          "per 10,000 lines")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events-2k", type=int, default=500)
    parser.add_argument("--events-20k", type=int, default=150)
    parser.add_argument("--locomo", type=int, default=0, help="first N LoCoMo turns (0: all)")
    parser.add_argument("--source", type=int, default=0, help="first N source files (0: all)")
    args = parser.parse_args()
    _django.setup("capture-scrub", WINNI_EMBEDDING_PROVIDER="hash")
    from django.conf import settings

    from agents import capture
    from bench.scrub_secrets import machine, mask
    from core import redaction
    from core.scrub import find_secrets

    timer = Timer(redaction.scrub, find_secrets, mask)
    redaction.scrub = timer  # the name core.redaction.redact calls
    print(f"# bench/capture_scrub.py — {machine()}")
    cost(capture, timer, settings, args.events_2k, args.events_20k)
    false_positives(capture, timer, args.locomo, args.source)


if __name__ == "__main__":
    main()
