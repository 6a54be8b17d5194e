"""Retrieval quality on LoCoMo and LongMemEval_S (dev slices in ../shared/bench-data/).

Each haystack is ingested into Winni through the REST API (one session scope per LoCoMo
conversation / LongMemEval question, one Winni conversation per haystack session, the session's
date as created_at); the vectors are then computed with the embedding worker's own function in
batches (in-process instead of a Celery worker). Every question is asked once per mode through
REST /api/v1/recall (kinds=message, session_id=scope) and scored at turn and session level,
next to a plain BM25 baseline (bm25s + Snowball stemming) on the same turn texts. Each question
passes when it is asked as `as_of` (LongMemEval: its question_date; LoCoMo: the last session's
date), so time words in it ("last week", "which came first") are read as the asker meant them.

    .venv/bin/python bench/retrieval.py                      # both dev files
    .venv/bin/python bench/retrieval.py --data other.json.gz --limit 20

Ingested scopes stay in the bench data dir (WINNI_DATA_DIR, default /tmp/winni-bench-retrieval)
and are reused by the next run; pass --fresh to ingest again."""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import math
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = str(Path(__file__).resolve().parent)
sys.path.insert(0, BENCH)
import _django  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench-data"
DEFAULT_FILES = [DATA / "locomo_dev.json.gz", DATA / "longmemeval_s_dev.json.gz"]
KS = (5, 10)
DEPTH = 50
MODES = ("fts", "semantic", "hybrid")
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Question:
    text: str
    category: str
    turns: set[str]  # evidence turn keys
    sessions: set[str]  # evidence session keys
    as_of: str | None = None  # when the question is asked (LongMemEval: question_date), ISO 8601
    answer: str | None = None  # the dataset's answer, as text


@dataclass
class Scope:
    name: str
    sessions: list[tuple[str, str, list[tuple[str, str, str]]]]  # (session key, ISO date, [(turn key, role, text)])
    questions: list[Question] = field(default_factory=list)


# --- loading ---------------------------------------------------------------------------------


def _locomo_evidence(raw: list[str], known: set[str]) -> set[str]:
    ids: set[str] = set()
    for item in raw:
        for part in re.split(r"[;\s]+", str(item)):
            part = part.replace("D:", "D")
            match = re.fullmatch(r"D(\d+):0*(\d+)", part)
            if match and f"D{match.group(1)}:{match.group(2)}" in known:
                ids.add(f"D{match.group(1)}:{match.group(2)}")
    return ids


def load_locomo(items: list[dict[str, Any]], prefix: str) -> list[Scope]:
    scopes = []
    for item in items:
        conv = item["conversation"]
        speakers = {conv.get("speaker_a"): "user", conv.get("speaker_b"): "assistant"}
        sessions = []
        numbers = sorted(int(m.group(1)) for key in conv if (m := re.fullmatch(r"session_(\d+)", key)))
        for number in numbers:
            when = dt.datetime.strptime(conv[f"session_{number}_date_time"], "%I:%M %p on %d %B, %Y")
            turns = []
            for turn in conv[f"session_{number}"]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares {turn['blip_caption']}]"
                turns.append((turn["dia_id"], speakers.get(turn["speaker"], "user"), text))
            sessions.append((f"D{number}", when.replace(tzinfo=dt.timezone.utc).isoformat(), turns))
        scope = Scope(name=f"{prefix}:{item['sample_id']}", sessions=sessions)
        known = {key for _, _, turns in sessions for key, _, _ in turns}
        # LoCoMo's questions carry no date: they are asked after the last session.
        asked = max(when for _, when, _ in sessions) if sessions else None
        for qa in item["qa"]:
            if qa.get("category") == 5:
                continue  # adversarial: no answer to find
            turns = _locomo_evidence(qa.get("evidence", []), known)
            if turns:
                scope.questions.append(Question(
                    text=qa["question"], category=LOCOMO_CATEGORIES.get(qa["category"], str(qa["category"])),
                    turns=turns, sessions={key.split(":")[0] for key in turns}, as_of=asked,
                    answer=str(qa.get("answer", "")) or None))
        scopes.append(scope)
    return scopes


def _longmemeval_date(text: str) -> str:
    """'2023/05/30 (Tue) 23:40' → ISO 8601 (UTC)."""
    when = dt.datetime.strptime(text.split(" (")[0] + " " + text.split(") ")[-1], "%Y/%m/%d %H:%M")
    return when.replace(tzinfo=dt.timezone.utc).isoformat()


def load_longmemeval(items: list[dict[str, Any]], prefix: str) -> list[Scope]:
    scopes = []
    for item in items:
        if item["question_id"].endswith("_abs"):
            continue
        sessions, evidence_turns = [], set()
        for index, (sid, date, turns) in enumerate(
            zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"])
        ):
            when = dt.datetime.fromisoformat(_longmemeval_date(date))
            key = f"S{index}:{sid}"
            rows = []
            for number, turn in enumerate(turns):
                if not turn["content"].strip():
                    continue
                rows.append((f"{key}#{number}", turn["role"], turn["content"]))
                if turn.get("has_answer"):
                    evidence_turns.add(f"{key}#{number}")
            sessions.append((key, when.isoformat(), rows))
        answer = set(item["answer_session_ids"])
        evidence_sessions = {key for key, _, _ in sessions if key.split(":", 1)[1] in answer}
        scope = Scope(name=f"{prefix}:{item['question_id']}", sessions=sessions)
        asked = _longmemeval_date(item["question_date"]) if item.get("question_date") else None
        scope.questions.append(Question(text=item["question"], category=item["question_type"],
                                        turns=evidence_turns, sessions=evidence_sessions, as_of=asked))
        scopes.append(scope)
    return scopes


def load(path: Path, limit: int | None) -> tuple[str, list[Scope]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        items = json.load(handle)
    prefix = path.name.split(".")[0]
    if items and "qa" in items[0]:
        scopes = load_locomo(items, prefix)
    elif items and "haystack_sessions" in items[0]:
        scopes = load_longmemeval(items, prefix)
    else:
        raise SystemExit(f"{path}: neither LoCoMo nor LongMemEval format")
    return prefix, scopes[:limit] if limit else scopes


# --- ingest through REST ---------------------------------------------------------------------


def ingest(client: Any, scope: Scope, fresh: bool) -> dict[tuple[str, int], str]:
    """Store the scope (unless already there); returns (conversation_id, turn) → turn key."""
    from conversations.models import Conversation, Message

    existing = Conversation.objects.filter(session_id=scope.name)
    complete = existing.count() == len(scope.sessions) and Message.objects.filter(
        conversation__session_id=scope.name).count() == sum(len(turns) for _, _, turns in scope.sessions)
    if fresh or not complete:
        existing.delete()
        for key, when, turns in scope.sessions:
            answer = client.post("/api/v1/conversations/", {"session_id": scope.name,
                                                             "metadata": {"bench_session": key}}, format="json")
            assert answer.status_code == 201, answer.content
            cid = answer.json()["conversation_id"]
            for _, role, text in turns:
                stored = client.post(f"/api/v1/conversations/{cid}/messages/",
                                     {"role": role, "content": text, "created_at": when}, format="json")
                assert stored.status_code == 201, stored.content
    mapping: dict[tuple[str, int], str] = {}
    turns_by_session = {key: turns for key, _, turns in scope.sessions}
    for conversation in Conversation.objects.filter(session_id=scope.name):
        turns = turns_by_session[conversation.metadata["bench_session"]]
        for number, (turn_key, _, _) in enumerate(turns, start=1):
            mapping[(str(conversation.id), number)] = turn_key
    return mapping


# --- scoring ---------------------------------------------------------------------------------


def shown_turns(hit: dict[str, Any]) -> list[int]:
    """The turns a hit shows: a question folded into its answer (core.recall.answers_first), then
    the hit's own."""
    asked = (hit.get("question") or {}).get("turn")
    return [asked, hit["turn"]] if asked else [hit["turn"]]


def session_of(turn_key: str) -> str:
    return turn_key.split("#")[0].split(":")[0] if "#" not in turn_key else turn_key.split("#")[0]


def dedupe(keys: list[str]) -> list[str]:
    return list(dict.fromkeys(keys))


def metrics(ranked: list[tuple[str, ...]], gold: set[str]) -> dict[str, float]:
    """Recall and nDCG at each cut-off of `ranked`: one entry per hit, the turns it shows (a
    question folded into its answer shows both: one place, as the reader sees one item)."""
    out = {}
    for k in KS:
        top = ranked[:k]
        found = gold & {key for shown in top for key in shown}
        out[f"recall@{k}"] = len(found) / len(gold)
        out[f"recall_all@{k}"] = float(found == gold)
        dcg = sum(1 / math.log2(i + 2) for i, shown in enumerate(top) if gold & set(shown))
        ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(gold))))
        out[f"ndcg@{k}"] = dcg / ideal
    return out


def bm25_baseline(scope: Scope) -> Any:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    keys = [key for _, _, turns in scope.sessions for key, _, _ in turns]
    texts = [text for _, _, turns in scope.sessions for _, _, text in turns]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)

    def search(question: str) -> list[str]:
        tokens = bm25s.tokenize([question], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        docs, _ = retriever.retrieve(tokens, k=min(DEPTH, len(keys)), show_progress=False)
        return [keys[i] for i in docs[0]]

    return search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", action="append", type=Path, help="a LoCoMo or LongMemEval JSON(.gz) file")
    parser.add_argument("--limit", type=int, help="only the first N conversations / questions per file")
    parser.add_argument("--types", help="only questions of these comma-separated categories / question types "
                                        "(and only their haystacks are ingested and embedded; --limit then "
                                        "counts the haystacks of each type)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of fts,semantic,hybrid")
    parser.add_argument("--fresh", action="store_true", help="ingest again even when the scope exists")
    parser.add_argument("--no-as-of", action="store_true",
                        help="do not pass the question's date as as_of (time words then read relative to now)")
    parser.add_argument("--recency", type=float, help="a recency half-life in days for every question")
    parser.add_argument("--no-time", action="store_true",
                        help="A/B: recall ignores the questions' time words (core.timerank.plan sees no time; "
                             "in-process only)")
    parser.add_argument("--range-boost", type=float, help="A/B: core.timerank.RANGE_BOOST (in-process only)")
    parser.add_argument("--reembed", action="store_true",
                        help="A/B of embedding settings: drop the scopes' message vectors and embed them again "
                             "(the ingest is reused)")
    parser.add_argument("--self-boost", type=float, help="A/B: core.recall.SELF_BOOST (0: off; in-process only)")
    parser.add_argument("--dump", type=Path, help="write each question's ranked turn keys and evidence (JSON lines)")
    parser.add_argument("--skip-embedding", action="store_true",
                        help="do not compute missing vectors (enough for --modes fts)")
    args = parser.parse_args()
    _django.setup("retrieval", WINNI_EMBEDDING_PROVIDER="local", WINNI_EMBEDDING_MODEL="all-MiniLM-L6-v2")

    from django.conf import settings
    from tqdm import tqdm

    from core.searchable import searchable_changed

    # The bench computes vectors itself, in big batches, right after the ingest (no worker runs).
    searchable_changed.disconnect(dispatch_uid="memory.embed_on_change")
    client = _django.rest_client()
    modes = [mode for mode in args.modes.split(",") if mode]
    if args.no_time:
        from core import timerank

        read = timerank.plan
        timerank.plan = lambda query, **kwargs: read("", **kwargs)  # type: ignore[assignment]
    if args.range_boost is not None:
        from core import timerank

        timerank.RANGE_BOOST = args.range_boost
    if args.self_boost is not None:
        from core import recall as core_recall

        core_recall.SELF_BOOST = args.self_boost
    from memory import retrieval

    print(f"fusion: {settings.WINNI_RECALL_FUSION} (RRF k={settings.WINNI_RECALL_RRF_K}), weights fts "
          f"{settings.WINNI_RECALL_FTS_WEIGHT} / vector {settings.WINNI_RECALL_VECTOR_WEIGHT}, context "
          f"{settings.WINNI_RECALL_CONTEXT_WEIGHT} (reach {retrieval.CONTEXT_REACH}), group {retrieval.GROUP_WEIGHT}; "
          f"model {settings.WINNI_EMBEDDING_MODEL}")
    for path in args.data or DEFAULT_FILES:
        name, scopes = load(path, None if args.types else args.limit)
        if args.types:
            wanted = set(args.types.split(","))
            for scope in scopes:
                scope.questions = [question for question in scope.questions if question.category in wanted]
            scopes = [scope for scope in scopes if scope.questions]
            if args.limit:  # the first N haystacks of each type
                taken: dict[str, int] = defaultdict(int)
                kept = []
                for scope in scopes:
                    kind = scope.questions[0].category
                    if taken[kind] < args.limit:
                        taken[kind] += 1
                        kept.append(scope)
                scopes = kept
        started = time.perf_counter()
        mappings = {scope.name: ingest(client, scope, args.fresh)
                    for scope in tqdm(scopes, desc=f"ingest {name} (REST)", unit="scope")}
        ingest_seconds = time.perf_counter() - started
        started = time.perf_counter()
        from conversations.models import Message

        if args.reembed:
            from memory import embeddings
            from memory.models import Embedding

            keys = [str(pk) for pk in Message.objects.filter(conversation__session_id__in=[s.name for s in scopes])
                    .values_list("pk", flat=True)]
            Embedding.objects.filter(kind="message", model=embeddings.model_name(), object_id__in=keys).delete()
        embedded = 0 if args.skip_embedding else _django.embed_pending("message", scope=Message.objects.filter(
            conversation__session_id__in=[scope.name for scope in scopes]))
        embed_seconds = time.perf_counter() - started
        turns = sum(len(t) for s in scopes for _, _, t in s.sessions)
        print(f"{name}: {len(scopes)} scopes, {turns} turns; ingest {ingest_seconds:.0f} s, "
              f"embedded {embedded} new turns in {embed_seconds:.0f} s")

        results: dict[str, list[tuple[str, dict[str, float], dict[str, float]]]] = defaultdict(list)
        latency: dict[str, list[float]] = defaultdict(list)
        total = sum(len(scope.questions) for scope in scopes)
        with tqdm(total=total * (len(modes) + 1), desc=f"questions {name}", unit="q") as bar:
            for scope in scopes:
                mapping = mappings[scope.name]
                baseline = bm25_baseline(scope)
                for question in scope.questions:
                    ranked_sets = {"bm25s": [(key,) for key in baseline(question.text)]}
                    bar.update(1)
                    for mode in modes:
                        began = time.perf_counter()
                        body = {"query": question.text, "kinds": ["message"], "limit": DEPTH, "mode": mode,
                                "session_id": scope.name}
                        if question.as_of and not args.no_as_of:
                            body["as_of"] = question.as_of
                        if args.recency:
                            body["recency"] = args.recency
                        answer = client.post("/api/v1/recall", body, format="json")
                        latency[mode].append((time.perf_counter() - began) * 1000)
                        assert answer.status_code == 200, answer.content
                        ranked_sets[mode] = [tuple(mapping[(hit["conversation_id"], turn)] for turn in shown_turns(hit))
                                             for hit in answer.json()["results"]]
                        bar.update(1)
                    if args.dump:
                        with args.dump.open("a") as dump:
                            dump.write(json.dumps({"scope": scope.name, "question": question.text,
                                                   "category": question.category, "turns": sorted(question.turns),
                                                   "ranked": ranked_sets}) + "\n")
                    for method, ranked in ranked_sets.items():
                        turn_scores = metrics(ranked, question.turns) if question.turns else {}
                        session_scores = metrics([(session,) for session in dedupe(
                            [session_of(key) for shown in ranked for key in shown])], question.sessions)
                        results[method].append((question.category, turn_scores, session_scores))
        report(name, results, latency)


def _mean(rows: list[dict[str, float]], key: str) -> float:
    rows = [row for row in rows if row]
    return sum(row[key] for row in rows) / len(rows) if rows else float("nan")


def report(name: str, results: dict[str, list[tuple[str, dict[str, float], dict[str, float]]]],
           latency: dict[str, list[float]]) -> None:
    columns = ["recall@5", "recall@10", "recall_all@5", "recall_all@10", "ndcg@5", "ndcg@10"]
    print(f"\n### {name} (n = {len(next(iter(results.values())))} questions)\n")
    print("| method | level | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for method, rows in results.items():
        for level, index in (("turn", 1), ("session", 2)):
            values = [_mean([row[index] for row in rows], column) for column in columns]
            print(f"| {method} | {level} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    categories = sorted({row[0] for rows in results.values() for row in rows})
    print(f"\nper category — turn recall@10 / turn recall_all@10 / session recall_all@5 ({name})\n")
    print("| category | n | " + " | ".join(results) + " |")
    print("|---|---|" + "---|" * len(results))
    for category in categories:
        cells, count = [], 0
        for rows in results.values():
            chosen = [row for row in rows if row[0] == category]
            count = len(chosen)
            cells.append(f"{_mean([r[1] for r in chosen], 'recall@10'):.3f} / {_mean([r[1] for r in chosen], 'recall_all@10'):.3f}"
                         f" / {_mean([r[2] for r in chosen], 'recall_all@5'):.3f}")
        print(f"| {category} | {count} | " + " | ".join(cells) + " |")
    print()
    for mode, samples in latency.items():
        p50, p95 = _django.percentiles(samples)
        print(f"recall latency ({mode}, REST in-process, limit {DEPTH}): p50 {p50:.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
