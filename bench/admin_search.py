"""Admin search across kinds: does the row that states a rule (its memory, the medallion decision,
the startup context) reach the top of the admin's search page when hundreds of messages mention
the same words in passing?

    .venv/bin/python -m bench.admin_search                  # fresh data dir, 80 conversations
    .venv/bin/python -m bench.admin_search --conversations 40 --runs 3

A project's twelve house rules ("store timestamps in UTC", "money as integer cents", ...) are each
stated once as a memory, once as a medallion decision (three medallions, four decisions each) and
once as a line of a startup context (two contexts), and discussed in two conversation turns.
Around them, conversations of everyday chat use each rule's words in passing ("the timestamps in
the CSV export", "the UTC offset of the build server"), plus unrelated memories, a medallion and a
context. Every row is embedded with the real all-MiniLM-L6-v2. Each rule is searched twice (its
short name, e.g. "UTC timestamps", and a question, e.g. "which timezone do we store times in").

Measured, for the page as it was (one hybrid recall over every kind, limit 20, hits grouped by
kind, best group first) and as it is (core.recall_across.recall_by_kind: each kind ranked on its own, one
list ordered by strength):
- targets in the top 10: the share of (query, target) pairs, target ∈ {memory, medallion,
  context}, where the target is among the first 10 hits shown;
- MRR: 1 / the position of the first hit that states the rule (its memory, medallion, context or
  one of its two stating turns), 0 when none is on the page;
- weak hits: hits on the page with none of the query's words and similarity below 0.3;
- time per search, p50 / p95.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# (short query, question, the rule as stated, words used in passing elsewhere)
RULES = [
    ("UTC timestamps", "which timezone do we store times in",
     "Store every timestamp in UTC (ISO 8601 with a Z); convert to local time only in the UI.",
     ["the timestamps in the CSV export are in the wrong column", "the UTC offset of the build server changed",
      "log timestamps are noisy today", "we compared timestamps across two services"]),
    ("money amounts", "how do we represent prices and totals",
     "Money amounts are integers in minor units (cents) with an ISO 4217 currency code; never floats.",
     ["the amounts on the invoice page look misaligned", "money is tight for the offsite this quarter",
      "large amounts of log output slow the tests", "the amounts column needs a wider layout"]),
    ("retry backoff", "how should failed requests be retried",
     "Retries use exponential backoff with jitter and at most five attempts.",
     ["the retry button on the form is grey", "backoff settings for the crawler are in the yaml",
      "a retry of the flaky test passed", "the deploy retry took ten minutes"]),
    ("feature flags", "how do we ship unfinished features",
     "New features ship behind a feature flag that defaults to off until product signs off.",
     ["the flags icon in the header is blurry", "feature requests go to the product board",
      "the country flags in the picker are out of date", "this feature of the editor is neat"]),
    ("database migrations", "when do schema changes run",
     "Every database migration must be reversible and runs before the deploy, never during it.",
     ["the database dashboard is slow to load", "bird migrations were on the news",
      "the migrations folder has a README now", "database backups finished at night"]),
    ("API versioning", "how do we make breaking changes to the public API",
     "The public API is versioned in the path (/api/v1/); a breaking change needs a new version.",
     ["the API docs page has a typo", "versioning of the design files is manual",
      "the API rate limit dashboard moved", "semantic versioning of the mobile app"]),
    ("JSON logs", "what format do our log lines use",
     "Logs are JSON lines with the request id on every line; no free-text prints.",
     ["the JSON fixture for the test is huge", "the logs of the staging cluster rotated",
      "a JSON schema for the settings file", "the logs viewer has dark mode"]),
    ("secrets vault", "where do credentials live",
     "Secrets live in the vault; never in the repository or in env files that are checked in.",
     ["the vault door at the bank branch", "secrets of the old team are in the wiki",
      "the vault UI needs a refresh", "trade secrets were discussed in the all-hands"]),
    ("code review", "what does a change need before merging",
     "Every change needs one approving code review before merge; the author merges.",
     ["the review of the quarterly goals", "code golf during the hackathon",
      "the review meeting moved to Thursday", "code coverage badge on the README"]),
    ("test coverage", "how much of the code must be tested",
     "New code needs tests; test coverage may not drop below 85 percent.",
     ["the test server was rebooted", "coverage of the conference talk was good",
      "the test data generator is slow", "insurance coverage questions go to HR"]),
    ("error messages", "what should a validation error say",
     "Error messages name the field and the rule that failed, in plain words.",
     ["error budget for the quarter is spent", "the messages tab in the app is empty",
      "an error in the spreadsheet formula", "messages from the bot are too chatty"]),
    ("pinned dependencies", "how are package versions managed",
     "Dependencies are pinned to exact versions in requirements.txt and updated weekly.",
     ["the dependencies graph in the wiki", "pinned tweets of the company account",
      "the pinned issue about onboarding", "circular dependencies in the org chart"]),
]
FILLER = [
    "Can you look at the failing build on main?", "I pushed a fix for the flaky login test.",
    "Let's pair on the onboarding flow after lunch.", "The staging cluster is back up.",
    "I renamed the settings module and updated the imports.", "The dashboard needs another chart.",
    "Who owns the nightly export job?", "The designer sent new icons for the sidebar.",
    "Let's split this pull request into two.", "The meeting notes are in the shared folder.",
    "I think the cache warm-up is too slow.", "The release notes draft is ready for review.",
]
OTHER_MEMORIES = [
    "The office wifi password rotates every Monday.", "Standup is at 9:30 in the small room.",
    "The design system lives in the ui-kit repository.", "Alice owns the billing service.",
    "The load balancer health check path is /healthz.", "Builds run on the self-hosted runners.",
] * 5
STATE_KINDS = ("memory", "medallion", "context")
TOP = 10


def build(conversations: int, seed: int = 24) -> dict[str, dict[str, set[str]]]:
    """Fill the stores; returns, per rule, the keys of the rows that state it, by kind."""
    from contexts import services as contexts
    from conversations import services as conversation_services
    from medallions import services as medallions
    from memory import services as memories

    rng = random.Random(seed)
    truth: dict[str, dict[str, set[str]]] = {rule[0]: {kind: set() for kind in (*STATE_KINDS, "message")}
                                            for rule in RULES}
    for name, _, statement, _ in RULES:
        memory, _ = memories.memory_store(content=statement, tags=["house-rules"])
        truth[name]["memory"].add(str(memory.pk))
    for text in OTHER_MEMORIES:
        memories.memory_store(content=f"{text} (note {rng.randint(1, 10**6)})", tags=["misc"])
    for group in range(3):
        rules = RULES[group * 4:(group + 1) * 4]
        document = {
            "scope": {"graph_nodes": [f"repo:shop/area-{group}"], "tags": ["project_state"]},
            "summary": {"high_level": f"Conventions of the shop's area {group}.", "subsystems": []},
            "decisions": [{"id": f"D-{i + 1:03d}", "statement": statement, "rationale": "agreed in review",
                           "confidence": 0.9, "status": "active"} for i, (_, _, statement, _) in enumerate(rules)],
            "open_questions": [],
            "affordances": {"recommended_entry_points": [], "avoid_repeating": [], "invariants": []},
        }
        medallion = medallions.medallion_create(document=document, actor="bench")
        for name, *_ in rules:
            truth[name]["medallion"].add(str(medallion.pk))
    medallions.medallion_create(document={
        "scope": {"graph_nodes": ["repo:shop/marketing"], "tags": ["project_state"]},
        "summary": {"high_level": "The marketing site: landing pages and the blog.", "subsystems": []},
        "decisions": [{"id": "D-001", "statement": "The blog is built with a static site generator.",
                       "rationale": "cheap hosting", "confidence": 0.8, "status": "active"}],
        "open_questions": [], "affordances": {"recommended_entry_points": [], "avoid_repeating": [], "invariants": []},
    }, actor="bench")
    for group in range(2):
        rules = RULES[group * 6:(group + 1) * 6]
        body = "House rules for this repository:\n" + "\n".join(f"- {statement}" for _, _, statement, _ in rules)
        context = contexts.context_set(name=f"house-rules-{group}", content=body, set_active=group == 0, actor="bench")
        for name, *_ in rules:
            truth[name]["context"].add(str(context.pk))
    contexts.context_set(name="release-week", content="This week: freeze on Thursday, release on Friday.",
                         set_active=False, actor="bench")

    for number in tqdm(range(conversations), desc="conversations", unit="conv"):
        turns = []
        for _ in range(rng.randint(14, 26)):
            if rng.random() < 0.45:
                _, _, _, passing = rng.choice(RULES)
                turns.append(rng.choice(passing).capitalize() + ".")
            else:
                turns.append(rng.choice(FILLER))
        conversation, stored = conversation_services.messages_store_bulk(
            session_id=f"bench-{number}", metadata={"source": "claude-code"},
            messages=[{"role": "user" if i % 2 == 0 else "assistant", "content": text} for i, text in enumerate(turns)])
    # Each rule is stated in two turns of the conversation where it was agreed.
    for name, _, statement, _ in RULES:
        conversation, stored = conversation_services.messages_store_bulk(
            session_id=f"bench-agreed-{name}", metadata={"source": "claude-code"},
            messages=[{"role": "user", "content": "We keep going back and forth on this one. Can we write it down?"},
                      {"role": "assistant", "content": f"Proposal: {statement}"},
                      {"role": "user", "content": f"Agreed. {statement}"}])
        truth[name]["message"] |= {str(stored[1].pk), str(stored[2].pk)}
    return truth


def legacy_page(query: str, kinds: list[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """The page as it was on 2026-11-24: recall(limit=20), hits grouped by kind, best group first."""
    from core.recall import recall

    groups: dict[str, list[dict[str, Any]]] = {}
    best: dict[str, float] = {}
    for hit in recall(query=query, kinds=kinds, limit=20)["results"]:
        groups.setdefault(hit["kind"], []).append(hit)
        best.setdefault(hit["kind"], hit["score"])
    order = sorted(groups, key=lambda kind: -best[kind])
    return [(hit["kind"], hit["id"], hit) for kind in order for hit in groups[kind]]


def current_page(query: str, kinds: list[str]) -> list[tuple[str, str, dict[str, Any]]]:
    from core.recall_across import recall_by_kind

    return [(hit["kind"], hit["id"], hit) for hit in recall_by_kind(query=query, kinds=kinds, limit=20)["results"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=80)
    parser.add_argument("--runs", type=int, default=5, help="timed searches per query and page")
    parser.add_argument("--data-dir", default="/tmp/winni-bench-admin-search")
    args = parser.parse_args()

    data_dir = Path(args.data_dir)
    if data_dir.exists():
        subprocess.run([sys.executable, "-c", f"from pathlib import Path; from winni_site import embedded; "
                        f"embedded.stop_all(Path({str(data_dir)!r}))"], cwd=ROOT, check=True)
        shutil.rmtree(data_dir)
    os.environ["WINNI_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("WINNI_LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")
    import django

    django.setup()
    from django.core.management import call_command

    from bench._django import embed_pending
    from core import searchable
    from core.recall_across import SIMILARITY_FLOOR, _coverage, query_words

    call_command("migrate", verbosity=0)
    truth = build(args.conversations)
    for kind in searchable.kinds():
        embed_pending(kind)
    from conversations.models import Message

    kinds = searchable.kinds()
    queries = [(name, text) for name, question, _, _ in RULES for text in (name, question)]
    print(f"corpus: {Message.objects.count()} messages, {len(RULES)} rules stated as memories, medallion "
          f"decisions and context lines; {len(queries)} queries")
    results: dict[str, dict[str, Any]] = {}
    for label, page_of in (("before (one recall, grouped)", legacy_page), ("after (ranked across kinds)", current_page)):
        in_top = total = weak = shown = 0
        reciprocal: list[float] = []
        times: list[float] = []
        for name, text in tqdm(queries, desc=label, unit="query"):
            page = page_of(text, kinds)
            for _ in range(args.runs):
                started = time.perf_counter()
                page_of(text, kinds)
                times.append((time.perf_counter() - started) * 1000)
            keys = [(kind, key) for kind, key, _ in page]
            for kind in STATE_KINDS:
                for key in truth[name][kind]:
                    total += 1
                    in_top += (kind, key) in keys[:TOP]
            stating = {(kind, key) for kind in truth[name] for key in truth[name][kind]}
            first = next((i for i, spot in enumerate(keys, start=1) if spot in stating), None)
            reciprocal.append(1 / first if first else 0.0)
            lexemes = query_words(text)
            for kind, key, hit in page:
                shown += 1
                holds = _coverage(kind, [key], dict.fromkeys(lexemes, 1.0)).get(key, (0.0, False))[1]
                similarity = (hit.get("scores") or {}).get("vector_similarity") or 0.0
                weak += not holds and similarity < SIMILARITY_FLOOR
        p50 = statistics.median(times)
        p95 = sorted(times)[int(0.95 * (len(times) - 1))]
        results[label] = {"top": in_top / total, "mrr": statistics.mean(reciprocal), "weak": weak / max(shown, 1),
                          "p50": p50, "p95": p95}
    load = os.getloadavg()[0]
    print(f"\nadmin search, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, 1-minute load {load:.1f}")
    print(f"{'page':<30} {'targets in top 10':>18} {'MRR':>6} {'weak hits':>10} {'p50 ms':>8} {'p95 ms':>8}")
    for label, row in results.items():
        print(f"{label:<30} {100 * row['top']:>17.0f}% {row['mrr']:>6.2f} {100 * row['weak']:>9.0f}% "
              f"{row['p50']:>8.1f} {row['p95']:>8.1f}")


if __name__ == "__main__":
    main()
