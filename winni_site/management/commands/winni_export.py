"""Export the stores as JSON Lines (one file per store plus manifest.json with SHA-256
checksums); format "winni-export" version 1, documented in docs/operations.md. Deterministic: the same data
gives the same files."""
from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from tqdm import tqdm

from core.errors import ApplicationError
from winni_site import portable


class Command(BaseCommand):
    help = "Write every store to DIR as JSONL (one file per store) with a manifest."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, help="folder to write (default: WINNI_DATA_DIR/exports/<time>)")
        parser.add_argument("--store", action="append", help="only this store (repeatable)")

    def handle(self, *args: Any, **options: Any) -> None:
        from django.conf import settings

        out = options["out"] or settings.DATA_DIR / "exports" / timezone.now().strftime("%Y%m%dT%H%M%SZ")
        bars: dict[str, tqdm] = {}

        def progress(store: str, lines: int) -> None:
            bars.setdefault(store, tqdm(desc=store, unit=" lines", file=cast(TextIO, self.stderr._out), leave=True)).update(1)

        try:
            manifest = portable.export_all(out=out, stores=options["store"], progress=progress)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        finally:
            for bar in bars.values():
                bar.close()
        for store, entry in manifest["stores"].items():
            rows = ", ".join(f"{count} {model}" for model, count in entry["rows"].items())
            self.stderr.write(f"{store}: {rows}")
        self.stdout.write(str(out))
