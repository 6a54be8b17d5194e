"""Backfill Claude Code JSONL transcripts (~/.claude/projects/<project>/<session>.jsonl).

Why: sessions that ran before the hooks were installed, or while Winni was away for longer than
the hook's spool kept, are still on disk. Re-running is safe: each line's uuid is stored with its
messages and a line already imported adds nothing. Malformed lines are counted and skipped."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from winni_site import capture


def transcript_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for name in paths:
        path = Path(name).expanduser()
        if path.is_dir():
            files += sorted(path.rglob("*.jsonl"))
        elif path.is_file():
            files.append(path)
        else:
            raise CommandError(f"{name}: no such file or directory")
    return files


class Command(BaseCommand):
    help = "Import Claude Code JSONL transcripts (files or folders) into conversations, idempotently."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH", help="a .jsonl file or a folder of them")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        files = transcript_files(options["paths"])
        total = capture.ImportStats(sessions=set())
        sizes = {path: path.stat().st_size for path in files}
        with tqdm(total=sum(sizes.values()), unit="B", unit_scale=True, disable=options["no_progress"],
                  file=self.stderr._out, desc="transcripts") as bar:
            for path in files:
                with path.open(encoding="utf-8", errors="replace") as handle:
                    lines = handle.readlines()
                stats = capture.transcript_import_lines(lines, transcript_path=str(path.resolve()))
                bar.update(sizes[path])
                total.merge(stats)
                if stats.malformed or stats.rejected:
                    self.stderr.write(f"{path}: {stats.malformed} malformed line(s) skipped, "
                                      f"{stats.rejected} message(s) refused")
        self.stdout.write(
            f"{len(files)} file(s), {len(total.sessions or ())} session(s), {total.lines} line(s): "
            f"{total.added} message(s) added, {total.duplicates} already present, "
            f"{total.malformed} malformed line(s) skipped, {total.other} other line(s), {total.rejected} refused"
            + (f", {total.excluded} of excluded projects (WINNI_CAPTURE_EXCLUDE)" if total.excluded else "")
        )
