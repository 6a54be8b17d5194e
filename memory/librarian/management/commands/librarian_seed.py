"""Pre-warm the answer cache from a JSONL file of question/answer pairs (seed 002 §12.4, cold
start). One object per line: {"question": "...", "answer": "..."} ("query" is accepted for
"question"). Idempotent: pairs already cached with the same answer are left alone."""
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from core.errors import ApplicationError
from memory.librarian import services

BATCH = 256


def read_pairs(path: Path) -> list[tuple[str, str]]:
    """All pairs of the file, or a CommandError naming the first bad line."""
    pairs = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CommandError(f"{path}:{number}: not JSON ({exc.msg})") from None
            question = row.get("question", row.get("query")) if isinstance(row, dict) else None
            answer = row.get("answer") if isinstance(row, dict) else None
            if not isinstance(question, str) or not question.strip() or not isinstance(answer, str) or not answer.strip():
                raise CommandError(f'{path}:{number}: needs non-empty "question" and "answer" strings')
            pairs.append((question, answer))
    return pairs


class Command(BaseCommand):
    help = "Pre-warm the answer cache from a JSONL file of {question, answer} pairs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--pin", action="store_true", help="pin the seeded answers (never evicted or expired)")
        parser.add_argument("--dry-run", action="store_true", help="check the file, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        pairs = read_pairs(path)
        if options["dry_run"]:
            self.stdout.write(f"{len(pairs)} pairs OK in {path} (dry run, nothing written)")
            return
        totals = {"created": 0, "updated": 0, "unchanged": 0}
        with tqdm(total=len(pairs), unit="pair", disable=options["verbosity"] == 0) as progress:
            for start in range(0, len(pairs), BATCH):
                batch = pairs[start:start + BATCH]
                try:
                    counts = services.librarian_seed(pairs=batch, pin=options["pin"])
                except ApplicationError as exc:
                    raise CommandError(f"pairs {start + 1}–{start + len(batch)}: {exc.message}") from None
                for key, value in counts.items():
                    totals[key] += value
                progress.update(len(batch))
        self.stdout.write(
            f"seeded {len(pairs)} pairs: {totals['created']} created, {totals['updated']} updated, "
            f"{totals['unchanged']} unchanged"
        )
