"""Automatic recall, measured by what reaches the model (agents/autorecall.py, docs/autorecall.md).

Loads, through the capture path (agents.capture.capture_hook_event, as the hook's POST
/api/v1/capture/events stores events; in-process, no HTTP), LoCoMo dev (one project per
conversation, one captured session per LoCoMo session: UserPromptSubmit for one speaker, Stop for
the other) and LongMemEval_S dev (one project per question and its haystack), plus a realistic
coding corpus (bench/realistic.py, COPY, each session in its project). The vectors are computed in-process in
batches (no worker). Then every question is asked as a new prompt in a new session:

- LoCoMo: evidence in the block: the share of questions with an evidence turn (any / all) among
  the injected items, at 3 budgets; and, for the questions an evidence turn answers word for word,
  whether the block's text holds the answer (a turn in the block can be cut away from it);
- LongMemEval_S: the share of questions with a turn of every evidence session among the items;
- silence: generic coding prompts (asked with no project: the whole store) and unanswerable
  questions (LoCoMo questions asked in another conversation's project);
- average injected characters and tokens (≈ chars / 4).

Each LoCoMo and LongMemEval_S question is asked as of its date (as bench/retrieval.py does), so its
time words are read as the asker meant them; `--no-time` (A/B) asks without reading them.

The silence sets: bench/autorecall_generic.txt's odd lines give the gate its generic vocabulary
(GENERIC_WORDS, so they cannot open it); its even lines, bench/autorecall_generic_more.txt and the
even-numbered of 200 unanswerable questions calibrate the thresholds. `--calibrate` searches them:
the most answerable questions opened (LoCoMo's, and LongMemEval_S's even-numbered ones; each
benchmark weighing the same) with at most 10 % of every calibration set opened. Silence is then
measured on sets no choice read: bench/autorecall_generic_test.txt (written after the others) and
the odd-numbered unanswerable questions.

    .venv/bin/python bench/autorecall.py --lme-limit 20 --realistic 3000 [--calibrate]

The corpus stays in WINNI_DATA_DIR (default /tmp/winni-bench-autorecall) and is reused."""
from __future__ import annotations

import argparse
import datetime as dt
import itertools
import random
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The bench modules as a package (bench.retrieval, bench._django), from the project root.
_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent))
from bench import _django  # noqa: E402
from bench import retrieval as retrieval_bench  # noqa: E402

GENERIC = Path(__file__).resolve().parent / "autorecall_generic.txt"
GENERIC_MORE = Path(__file__).resolve().parent / "autorecall_generic_more.txt"
GENERIC_TEST = Path(__file__).resolve().parent / "autorecall_generic_test.txt"
BUDGETS = (1000, 2000, 4000)
# ../shared/bench-data from the checkout; a git worktree sits one level deeper.
DATA = next((path for path in (retrieval_bench.DATA, Path(__file__).resolve().parents[3] / "shared" / "bench-data")
             if path.exists()), retrieval_bench.DATA)


def prompts_of(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def generic_prompts() -> tuple[list[str], list[str]]:
    """(the half that gives the generic vocabulary, the half that calibrates the thresholds)."""
    lines = prompts_of(GENERIC)
    return lines[0::2], lines[1::2]


# --- loading through the capture path --------------------------------------------------------


def stated_answer(scope: Any, question: Any) -> str | None:
    """The question's answer, lower case, when one of its evidence turns says it word for word
    (at least 3 characters: "2022", "7 May 2023", "Psychology"); else None."""
    answer = (question.answer or "").strip().lower()
    if len(answer) < 3:
        return None
    texts = {key: text.lower() for _, _, turns in scope.sessions for key, _, text in turns}
    return answer if any(answer in texts.get(key, "") for key in question.turns) else None


def capture_scope(scope: Any, slug: str) -> dict[tuple[str, int], str]:
    """Capture a benchmark scope as sessions of project `slug` (unless already there); returns
    (conversation id, turn) → the benchmark's turn key."""
    from agents import capture
    from conversations.models import Conversation, Message
    from core import projects

    project = projects.project_find(slug) or projects.project_create(name=slug)
    expected = sum(len(turns) for _, _, turns in scope.sessions)
    have = Message.objects.filter(conversation__project=project).count()
    if have != expected:
        Conversation.objects.filter(project=project).delete()
        for key, when, turns in scope.sessions:
            start = dt.datetime.fromisoformat(when)
            session_id = f"{slug}:{key}"
            for number, (_, role, text) in enumerate(turns):
                payload: dict[str, Any] = {"session_id": session_id, "cwd": f"/bench/{slug}"}
                if role == "user":
                    payload.update(hook_event_name="UserPromptSubmit", prompt=text)
                else:
                    payload.update(hook_event_name="Stop", last_assistant_message=text)
                result = capture.capture_hook_event(
                    payload=payload, project=slug, event_id=f"{session_id}#{number}",
                    captured_at=(start + dt.timedelta(seconds=number)).isoformat())
                assert result.stored, result
    mapping: dict[tuple[str, int], str] = {}
    by_key = {f"{slug}:{key}": turns for key, _, turns in scope.sessions}
    for conversation in Conversation.objects.filter(project=project):
        for number, (turn_key, _, _) in enumerate(by_key[conversation.session_id], start=1):
            mapping[(str(conversation.id), number)] = turn_key
    return mapping


def slug_of(name: str) -> str:
    return name.replace(":", "-").replace("_", "-").lower()[:90]


@dataclass
class Asked:
    prompt: str
    project: str | None
    gold_turns: set[str]
    gold_sessions: set[str]
    mapping: dict[tuple[str, int], str]
    as_of: str | None = None  # when the question is asked (its time words are read from then)
    # The answer, when an evidence turn states it word for word (LoCoMo: "7 May 2023"): whether the
    # block shows it, not only the turn (a snippet cut around the prompt's words can leave it out).
    stated: str | None = None


# --- the gate, offline -----------------------------------------------------------------------


def realistic_facts(messages: int) -> list[Any]:
    """The facts the loaded realistic corpus states (each asked as a question; its ticket id in the
    block means the statement reached the model)."""
    if not messages:
        return []
    from bench.realistic import RealisticCorpus

    corpus = RealisticCorpus(conversations=max(10, messages // 50), messages=messages, seed=0)
    for _ in corpus:
        pass
    return [fact for project in corpus.projects for fact in project.facts if fact.said > 0]


def opens(found: Any, gate: Any) -> bool:
    from agents import autorecall

    return bool(autorecall.block_items(found, gate))


def items_for(found: Any, gate: Any, budget: int) -> list[dict[str, Any]]:
    from agents import autorecall

    ordered = autorecall.block_items(found, gate)
    if not ordered:
        return []
    block = autorecall._block(ordered, found.weights, budget, {})
    # An answer's folded question is evidence only where its line shows it: _block leaves the
    # question out when the room is short, and the item's source still names its turn.
    lines = block["text"].split("\n- [")[1:]
    items = []
    for item, line in zip(block["items"], lines, strict=True):
        turn = item["source"].get("question_turn")
        if turn and f"(answering turn {turn}:" not in line:
            item = {**item, "source": {k: v for k, v in item["source"].items() if k != "question_turn"}}
        items.append(item)
    return items


def keys_of(items: list[dict[str, Any]], mapping: dict[tuple[str, int], str]) -> list[str]:
    """The benchmark's turn keys of the block's messages, in order; an answer with its question
    folded into it (core.recall.answers_first) holds both turns."""
    keys = []
    for item in items:
        if item["kind"] != "message":
            continue
        source = item["source"]
        keys.append(mapping.get((source.get("conversation_id"), source.get("turn")), ""))
        if source.get("question_turn"):
            keys.append(mapping.get((source.get("conversation_id"), source["question_turn"]), ""))
    return keys


def first_keys(items: list[dict[str, Any]], mapping: dict[tuple[str, int], str], count: int = 3) -> set[str]:
    """The turn keys of the block's first `count` items (of any kind)."""
    return set(keys_of(items[:count], mapping))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lme-limit", type=int, default=20, help="LongMemEval_S questions (each its own haystack)")
    parser.add_argument("--realistic", type=int, default=3000, help="messages of the realistic coding corpus")
    parser.add_argument("--calibrate", action="store_true", help="search the gate's thresholds")
    parser.add_argument("--explore", action="store_true", help="the block's shape: items per session, snippet size")
    parser.add_argument("--candidates", type=int, default=0, help="rows asked of hybrid recall (default: the service's)")
    parser.add_argument("--only-latency", action="store_true", help="measure the hooks' latency, nothing else")
    parser.add_argument("--latency", type=int, default=0, help="time N prompts through each hook type")
    parser.add_argument("--digests", action="store_true",
                        help="with a digest of every session (as SessionEnd writes it); without: none in the store")
    parser.add_argument("--no-time", action="store_true",
                        help="A/B: the prompts' time words are not read (each question is otherwise asked as "
                             "of its date, as bench/retrieval.py does)")
    args = parser.parse_args()
    _django.setup("autorecall", WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL="all-MiniLM-L6-v2")
    from django.db import connection
    from django.db.models import Count
    from tqdm import tqdm

    from agents import autorecall
    from conversations.models import Conversation, Message
    from core.searchable import searchable_changed

    searchable_changed.disconnect(dispatch_uid="memory.embed_on_change")
    started = time.perf_counter()
    _, locomo = retrieval_bench.load(DATA / "locomo_dev.json.gz", None)
    _, lme = retrieval_bench.load(DATA / "longmemeval_s_dev.json.gz", args.lme_limit)
    mappings = {}
    for scope in tqdm(locomo + lme, desc="capture", unit="scope"):
        mappings[scope.name] = capture_scope(scope, slug_of(scope.name))
    if args.realistic and not Conversation.objects.filter(metadata__has_key="project").exists():
        from bench import realistic

        realistic.load_realistic(conversations=max(10, args.realistic // 50), messages=args.realistic, seed=0,
                                 with_projects=True)
    if Conversation.objects.filter(metadata__has_key="project", project__isnull=True).exists():
        parser.error("the realistic sessions of this store have no project (written before they had): "
                     "remove WINNI_DATA_DIR and load again")
    _django.embed_pending("message")
    digests_set(args.digests)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE conversations_message")
    messages = Message.objects.count()
    print(f"corpus: {messages} messages ({len(locomo)} LoCoMo projects, {len(lme)} LongMemEval_S projects, "
          f"realistic {args.realistic}); loaded in {time.perf_counter() - started:.0f} s")

    if args.candidates:
        autorecall.CANDIDATES = args.candidates
    if args.only_latency:
        latency(args.latency or 100, [(q.text, slug_of(s.name)) for s in locomo for q in s.questions],
                sum(generic_prompts(), []), messages)
        return

    def gather(asked: list[Asked], desc: str) -> list[Any]:
        out = []
        for one in tqdm(asked, desc=desc, unit="q"):
            project = autorecall._project_of(one.project)
            time = None if args.no_time else autorecall.time_plan(one.prompt, one.as_of)
            out.append(autorecall.candidates_for(one.prompt, project, f"bench-{uuid.uuid4().hex}", time))
        return out

    locomo_asked = [Asked(q.text, slug_of(s.name), q.turns, q.sessions, mappings[s.name], q.as_of,
                          stated_answer(s, q)) for s in locomo for q in s.questions]
    lme_asked = [Asked(q.text, slug_of(s.name), q.turns, q.sessions, mappings[s.name], q.as_of)
                 for s in lme for q in s.questions]
    unanswerable = [Asked(q.text, slug_of(locomo[(i + 1) % len(locomo)].name), set(), set(), {})
                    for i, s in enumerate(locomo) for q in s.questions]
    random.Random(7).shuffle(unanswerable)
    unanswerable = unanswerable[:200]
    words, calibration = generic_prompts()
    facts = realistic_facts(args.realistic)

    def anywhere(prompts: list[str], project: str | None = None) -> list[Asked]:  # no project: the whole store
        return [Asked(prompt, project, set(), set(), {}) for prompt in prompts]

    # The coding project with the most sessions: where a developer types the generic instructions.
    busiest = (Conversation.objects.filter(metadata__has_key="project", project__isnull=False)
               .values("project__slug").annotate(n=Count("id")).order_by("-n").first() or {}).get("project__slug")
    if busiest:
        print(f"generic prompts asked in {busiest} too: {Conversation.objects.filter(project__slug=busiest).count()} "
              f"sessions, {Message.objects.filter(project__slug=busiest).count()} messages")

    found = {
        # Asked in the fact's project, as the hook asks in the session's folder.
        "realistic": gather([Asked(f.question, f.project, set(), set(), {}) for f in facts], "realistic questions"),
        "locomo": gather(locomo_asked, "LoCoMo"),
        "lme": gather(lme_asked, "LongMemEval_S"),
        "generic_words": gather(anywhere(words), "generic (vocabulary)"),
        "generic_cal": gather(anywhere(calibration), "generic (cal)"),
        "generic_more": gather(anywhere(prompts_of(GENERIC_MORE)), "generic (more)"),
        "generic_test": gather(anywhere(prompts_of(GENERIC_TEST)), "generic (test)"),
        "generic_test_in_project": gather(anywhere(prompts_of(GENERIC_TEST), busiest), "generic (test, in a project)")
        if busiest else [],
        "unanswerable_cal": gather(unanswerable[0::2], "unanswerable (cal)"),
        "unanswerable_test": gather(unanswerable[1::2], "unanswerable (test)"),
    }
    if args.latency:
        latency(args.latency, [(a.prompt, a.project) for a in locomo_asked], words + calibration, messages)
    gate = autorecall.GATE
    if args.calibrate:
        gate = calibrate(found)
    report(gate, found, locomo_asked, lme_asked, [fact.ticket for fact in facts])
    if args.explore:
        explore(gate, found, locomo_asked, lme_asked)


def digests_set(wanted: bool) -> None:
    """A digest of every session of the store (conversations.services.digest, as SessionEnd and
    PreCompact write them), embedded; or none (and no vector of one)."""
    from tqdm import tqdm

    from conversations.models import Conversation, SessionDigest
    from conversations.services import session_digest_write
    from memory.models import Embedding

    if not wanted:
        SessionDigest.objects.all().delete()
        Embedding.objects.filter(kind="digest").delete()
        return
    missing = Conversation.objects.filter(digest__isnull=True).values_list("pk", flat=True)
    for conversation_id in tqdm(list(missing), desc="digests", unit="session"):
        session_digest_write(conversation_id=conversation_id, trigger="bench")
    _django.embed_pending("digest")
    print(f"digests: {SessionDigest.objects.count()}")


def latency(count: int, questions: list[tuple[str, str]], generic: list[str], messages: int) -> None:
    """The hooks' latency (bench/hook_latency.py) through a real server (uvicorn, one worker): half
    the prompts LoCoMo questions asked in their project (`questions`: (prompt, slug); a session in
    /bench/<slug>), half generic prompts in a LoCoMo project's folder."""
    import os

    from bench import hook_latency
    from core.models import KeyKind, Project, ProjectKey
    from tests.support import LiveServer
    from winni_site import auth

    _, token = auth.token_create(name=f"bench-latency-{uuid.uuid4().hex[:8]}")
    slugs = list(Project.objects.filter(slug__startswith="locomo").values_list("slug", flat=True))
    for project in Project.objects.filter(slug__in=slugs):
        # The hooks name the project by its folder, as a session in /bench/<slug> would.
        ProjectKey.objects.get_or_create(kind=KeyKind.PATH, value=f"/bench/{project.slug}", defaults={"project": project})
    asked = [(prompt, f"/bench/{slug}") for prompt, slug in questions]
    server = LiveServer(dict(os.environ))
    try:
        result = hook_latency.hook_latency(
            url=server.url, token=token, prompts=hook_latency.draws(count, asked, generic, [f"/bench/{s}" for s in slugs]),
            warm=asked[:3])
    finally:
        server.stop()
        hook_latency.cleanup()
    hook_latency.report(result, f"{count} prompts (half LoCoMo questions, half generic), corpus {messages} messages")


def rate(found: list[Any], gate: Any) -> float:
    return sum(opens(f, gate) for f in found) / len(found) if found else float("nan")


def calibrate(found: dict[str, list[Any]]) -> Any:
    """The gate from the calibration sets. generic_max: the lowest that takes at most 1 % of the
    LoCoMo questions for generic instructions. The other thresholds: the most answerable questions opened (LoCoMo's
    and the calibration half of LongMemEval_S's, each benchmark weighing the same: its short chat
    turns and its long ones) with at most 10 % of each calibration set opened."""
    from agents import autorecall

    generic_max = 0.95
    questions = found["locomo"] + found["realistic"]
    for candidate in (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95):
        if sum(f.generic >= candidate for f in found["locomo"]) <= 0.01 * len(found["locomo"]) \
                and not any(f.generic >= candidate for f in found["realistic"]):
            generic_max = candidate
            break
    print(f"\ngeneric_max {generic_max}: questions taken for instructions "
          f"{sum(f.generic >= generic_max for f in questions)} of {len(questions)} (LoCoMo and the realistic corpus'); "
          f"realistic questions' generic similarity max {max((f.generic for f in found['realistic']), default=0):.2f}")
    min_terms = 1
    for candidate in (3, 2):
        if sum(len(f.weights) < candidate for f in found["locomo"]) <= 0.01 * len(found["locomo"]):
            min_terms = candidate
            break
    print(f"min_terms {min_terms}: LoCoMo questions with fewer specific words "
          f"{sum(len(f.weights) < min_terms for f in found['locomo'])}")
    best = None
    rows = []
    lme_calibration = found["lme"][0::2]
    for overlap_min, similarity_min, alone in itertools.product((0.3, 0.4, 0.5, 0.6, 0.7), (0.0, 0.2, 0.3, 0.4, 0.5),
                                                                (0.6, 0.7, 0.8, 2.0)):
        gate = autorecall.Gate(overlap_min=overlap_min, similarity_min=similarity_min, similarity_alone=alone,
                               generic_max=generic_max, min_terms=min_terms)
        silent = max(rate(found[name], gate) for name in ("generic_words", "generic_cal", "generic_more", "unanswerable_cal"))
        opened = [rate(found["locomo"], gate)] + ([rate(lme_calibration, gate)] if lme_calibration else [])
        rows.append((sum(opened) / len(opened), opened, silent, gate))
        if silent <= 0.10 and (best is None or rows[-1][0] > best[0]):
            best = rows[-1]
    print("calibration (answerable opened: LoCoMo, LongMemEval_S half; worst calibration silence breach → gate), "
          "best 8 under 10 %:")
    for score, opened, silent, gate in sorted((r for r in rows if r[2] <= 0.10), key=lambda r: -r[0])[:8]:
        print(f"  opened {score:.3f} ({' / '.join(f'{o:.3f}' for o in opened)}) silence-breach {silent:.3f} "
              f"{gate.as_dict()}")
    assert best is not None, "no gate keeps the calibration sets at or under 10 %"
    print(f"chosen: {best[3].as_dict()}")
    return best[3]


def report(gate: Any, found: dict[str, list[Any]], locomo: list[Asked], lme: list[Asked], tickets: list[str]) -> None:
    print(f"\ngate {gate.as_dict()}")
    for name in ("generic_words", "generic_cal", "generic_more", "generic_test", "generic_test_in_project",
                 "unanswerable_cal", "unanswerable_test"):
        if not found[name]:
            continue
        print(f"  {name}: {len(found[name])} prompts, injected {rate(found[name], gate) * 100:.1f} %")
        if name.endswith("test"):
            opened = [f for f in found[name] if opens(f, gate)]
            print("    injected: " + "; ".join(f"{f.prompt!r} (generic {f.generic:.2f})" for f in opened[:30]))
    if found["realistic"]:
        got = sum(opens(f, gate) for f in found["realistic"])
        stated = sum(ticket in block_text(f, gate, 4000) for f, ticket in zip(found["realistic"], tickets))
        top3 = sum(ticket in "\n".join(block_text(f, gate, 4000).splitlines()[1:4])
                   for f, ticket in zip(found["realistic"], tickets))
        print(f"  realistic coding questions: {len(found['realistic'])}, injected {got}, the fact's statement "
              f"(its ticket id) in the block {stated}, among its first 3 items {top3}")
        missed = [f.prompt for f, ticket in zip(found["realistic"], tickets) if ticket not in block_text(f, gate, 4000)]
        print("    missed: " + "; ".join(repr(prompt) for prompt in missed))
    stating = [(asked, f) for asked, f in zip(locomo, found["locomo"]) if asked.stated]
    print(f"| budget (chars) | LoCoMo evidence any / all | LoCoMo evidence among the first 3 (tuning / checking) "
          f"| LoCoMo answer's words in the block ({len(stating)} questions an evidence turn answers word for word) "
          f"| LoCoMo opened | LongMemEval_S every evidence session | avg injected chars (tokens) |")
    print("|---|---|---|---|---|---|---|")
    for budget in BUDGETS:
        any_hits = all_hits = sizes = 0
        injected = 0
        first3: list[bool] = []
        for asked, f in zip(locomo, found["locomo"]):
            items = items_for(f, gate, budget)
            keys = set(keys_of(items, asked.mapping))
            any_hits += bool(keys & asked.gold_turns)
            all_hits += asked.gold_turns <= keys
            first3.append(bool(first_keys(items, asked.mapping) & asked.gold_turns))
            if items:
                injected += 1
                sizes += block_chars(f, gate, budget)
        said = sum(asked.stated in block_text(f, gate, budget).lower() for asked, f in stating)
        lme_hits = every_session(found["lme"], lme, gate, budget)
        held_out = lme_hits[1::2]
        n = len(locomo)
        avg = sizes / injected if injected else 0
        halves = " / ".join(f"{sum(h) / max(1, len(h)) * 100:.1f} %" for h in (first3[0::2], first3[1::2]))
        print(f"| {budget} | {any_hits / n * 100:.1f} % / {all_hits / n * 100:.1f} % "
              f"| {sum(first3) / n * 100:.1f} % ({halves}) | {said / max(1, len(stating)) * 100:.1f} % "
              f"| {injected / n * 100:.1f} % "
              f"| {sum(lme_hits) / max(1, len(lme)):.3f} (held-out half {sum(held_out) / max(1, len(held_out)):.3f}) "
              f"| {avg:.0f} ({avg / 4:.0f}) |")
    print(f"LongMemEval_S opened {rate(found['lme'], gate) * 100:.1f} %")


def every_session(found: list[Any], lme: list[Asked], gate: Any, budget: int) -> list[bool]:
    """Per LongMemEval_S question: whether the block holds a turn of each of its evidence sessions."""
    hits = []
    for asked, f in zip(lme, found):
        keys = keys_of(items_for(f, gate, budget), asked.mapping)
        hits.append(asked.gold_sessions <= {retrieval_bench.session_of(key) for key in keys if key})
    return hits


def explore(gate: Any, found: dict[str, list[Any]], locomo: list[Asked], lme: list[Asked]) -> None:
    """The block's shape at the default budget: how many items of a session come before the other
    sessions' first (0: none wait, recall's order), and the snippet size."""
    import dataclasses

    from agents import autorecall

    print("\n| per session (0: recall's order) | snippet chars | LoCoMo evidence any | LoCoMo evidence among the "
          "first 3 (tuning / checking) | LongMemEval_S every evidence session (even / odd questions) "
          "| LoCoMo average block chars |")
    print("|---|---|---|---|---|---|")
    default = autorecall.SNIPPET_CHARS
    try:
        for per_session, snippet in itertools.product((1, 2, 3, 0), (300, 500)):
            autorecall.SNIPPET_CHARS = snippet
            variant = dataclasses.replace(gate, per_session=per_session or 10_000)
            blocks = [items_for(f, variant, 4000) for f in found["locomo"]]
            hits = sum(bool(set(keys_of(items, a.mapping)) & a.gold_turns) for a, items in zip(locomo, blocks))
            first3 = [bool(first_keys(items, a.mapping) & a.gold_turns) for a, items in zip(locomo, blocks)]
            lme_hits = every_session(found["lme"], lme, variant, 4000)
            sizes = [block_chars(f, variant, 4000) for f in found["locomo"] if opens(f, variant)]
            halves = " / ".join(f"{sum(half) / max(1, len(half)):.3f}" for half in (lme_hits[0::2], lme_hits[1::2]))
            thirds = " / ".join(f"{sum(half) / max(1, len(half)) * 100:.1f} %" for half in (first3[0::2], first3[1::2]))
            print(f"| {per_session} | {snippet} | {hits / len(locomo) * 100:.1f} % "
                  f"| {sum(first3) / len(locomo) * 100:.1f} % ({thirds}) "
                  f"| {sum(lme_hits) / max(1, len(lme)):.3f} ({halves}) | {sum(sizes) / max(1, len(sizes)):.0f} |")
    finally:
        autorecall.SNIPPET_CHARS = default


def block_text(found: Any, gate: Any, budget: int) -> str:
    from agents import autorecall

    ordered = autorecall.block_items(found, gate)
    return autorecall._block(ordered, found.weights, budget, {})["text"] if ordered else ""


def block_chars(found: Any, gate: Any, budget: int) -> int:
    return len(block_text(found, gate, budget))


if __name__ == "__main__":
    main()
