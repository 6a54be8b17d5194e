"""Scrub what is already stored: secrets in data captured before scrubbing existed (or before the
detector knew their format) become [REDACTED:<type>], with the index and vectors following.
`--dry-run` only counts. Interrupted, the next run goes on where it stopped (`--restart`: from
the start). docs/privacy.md, "Scrubbing what is stored"."""
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from winni_site import scrub_stored


class Command(BaseCommand):
    help = "Re-scan stored rows for secrets: counts per type and store, and (without --dry-run) rewrite them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="count only; change nothing")
        parser.add_argument("--restart", action="store_true", help="ignore where an interrupted run stopped")
        parser.add_argument("--store", action="append", choices=[s.label for s in scrub_stored.STORES],
                            help="only this store (repeatable)")

    def handle(self, *args: Any, **options: Any) -> None:
        bars: dict[str, tqdm] = {}

        def progress(label: str, rows: int) -> None:
            bars.setdefault(label, tqdm(desc=label, unit=" rows", file=cast(TextIO, self.stderr._out), leave=True)).update(rows)

        try:
            report = scrub_stored.scrub_stored(dry_run=bool(options["dry_run"]), restart=bool(options["restart"]),
                                               stores=options["store"] or None, progress=progress)
        finally:
            for bar in bars.values():
                bar.close()
        verb = "would rewrite" if options["dry_run"] else "rewrote"
        for label, scanned in report.scanned.items():
            found = report.found.get(label) or {}
            types = ", ".join(f"{kind} {n}" for kind, n in sorted(found.items())) or "none"
            dropped = f", {report.dropped[label]} dropped as duplicates" if report.dropped.get(label) else ""
            self.stdout.write(f"{label}: {scanned} rows scanned, {verb} {report.changed[label]}{dropped}; "
                              f"secrets: {types}")
        total = sum(sum(found.values()) for found in report.found.values())
        self.stdout.write(f"total: {total} secret(s) in {sum(report.changed.values())} row(s)"
                          + (" (dry run: nothing changed)" if options["dry_run"] else ""))
