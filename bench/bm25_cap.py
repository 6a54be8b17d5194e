"""BM25 within a big project when a question's rarest word is in more rows than the candidate cap
(memory.retrieval.FTS_CANDIDATE_CAP): how close its top 20 comes to BM25 over every matching row
(the cap lifted), and what one BM25 query costs, on the realistic corpus that bench/memory.py
leaves in WINNI_DATA_DIR (--corpus realistic). In process, the projects with their own full-text
index (the largest), each project's own bench questions (bench/realistic.py's project_queries).

    .venv/bin/python bench/bm25_cap.py                    # the two largest projects
    .venv/bin/python bench/bm25_cap.py --projects 3 --rounds 3

Run it on two trees against the same store to compare code."""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _django  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000, help="the size the corpus was built with")
    parser.add_argument("--projects", type=int, default=2, help="the largest projects to measure")
    parser.add_argument("--questions", type=int, default=100, help="questions per project")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds after a warm-up round")
    args = parser.parse_args()
    _django.setup("memory")
    from django.db.models import Count
    from realistic import RealisticCorpus, project_queries

    from conversations.models import Message
    from core import projects
    from core.models import Project
    from memory import retrieval

    corpus = RealisticCorpus(conversations=max(1, args.messages // 10), messages=args.messages, seed=0)
    asked = project_queries(corpus, 50 * args.questions)
    largest = (Message.objects.exclude(project=None).values("project").annotate(n=Count("id")).order_by("-n")
               [:args.projects])
    for row in largest:
        project = Project.objects.get(pk=row["project"])
        # The project's scope by the one rule, carrying its project (so BM25 reads its own index).
        scope = projects.search_scope(project, model=Message).scope(Message.objects.all())
        size = row["n"]
        frequencies = retrieval.lexeme_frequencies("conversations_message")
        questions = [retrieval.query_lexemes(text) for _, text, about in asked if about.name == project.slug]
        questions = [lexemes for lexemes in questions[:args.questions] if lexemes]
        timings: list[float] = []
        for round_ in range(args.rounds + 1):
            for lexemes in questions:
                started = time.perf_counter()
                retrieval.bm25(kind="message", lexemes=lexemes, scope=scope.rows, limit=20, filtered=True,
                               within=scope.within)
                if round_:
                    timings.append((time.perf_counter() - started) * 1000)
        overlaps = []
        cap = retrieval.FTS_CANDIDATE_CAP
        for lexemes in questions:
            estimated = {lexeme: frequencies.get(lexeme, 0.0) * size for lexeme in lexemes}
            rarest = min(estimated.values())
            if len(lexemes) < 2 or rarest <= cap:
                continue  # the cap does not bind: every match of the rarest words is a candidate
            got = retrieval.bm25(kind="message", lexemes=lexemes, scope=scope.rows, limit=20, filtered=True,
                                 within=scope.within)
            retrieval.FTS_CANDIDATE_CAP = 100 * size  # every matching row a candidate
            try:
                exact = retrieval.bm25(kind="message", lexemes=lexemes, scope=scope.rows, limit=20,
                                       filtered=True, within=scope.within)
            finally:
                retrieval.FTS_CANDIDATE_CAP = cap
            overlaps.append(len({key for key, _ in got} & {key for key, _ in exact}) / max(1, min(20, len(exact))))
        p50, p95 = _django.percentiles(timings)
        print(f"{project.slug} ({size:,} messages): {len(overlaps)} of {len(questions)} questions over the cap, "
              f"overlap@20 with BM25 over every match {statistics.mean(overlaps) if overlaps else float('nan'):.3f}; "
              f"BM25 of all {len(questions)} questions p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
              f"{1000 / statistics.mean(timings):.0f} queries/s")


if __name__ == "__main__":
    main()
