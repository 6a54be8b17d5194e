"""Import an export folder written by winni_export. Ids are kept and rows already present are
skipped, so importing twice adds nothing; each file is one transaction (a bad line rolls the whole
file back and names the line)."""
from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from core.errors import ApplicationError
from winni_site import portable


class Command(BaseCommand):
    help = "Import the JSONL files of an export folder (idempotent, atomic per file)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path)
        parser.add_argument("--store", action="append", help="only this store (repeatable)")

    def handle(self, *args: Any, **options: Any) -> None:
        bars: dict[str, tqdm] = {}

        def progress(store: str, line: int) -> None:
            bars.setdefault(store, tqdm(desc=store, unit=" lines", file=cast(TextIO, self.stderr._out), leave=True)).update(1)

        try:
            report = portable.import_all(folder=options["folder"], stores=options["store"], progress=progress)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        finally:
            for bar in bars.values():
                bar.close()
        for store, added in report.items():
            self.stdout.write(f"{store}: added " + ", ".join(f"{count} {model}" for model, count in added.items()))
