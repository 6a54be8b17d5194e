"""Back up the whole database with pg_dump (custom format) plus a manifest (time, schema version,
row counts per table, SHA-256). Beat runs the same service every WINNI_BACKUP_INTERVAL_HOURS; the
newest WINNI_BACKUP_KEEP backups in WINNI_BACKUP_DIR are kept."""
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import ApplicationError
from winni_site import backups


class Command(BaseCommand):
    help = "Back up the database (pg_dump custom format + manifest) to WINNI_BACKUP_DIR or --out."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", type=Path, help="a .dump file or a folder (default: WINNI_BACKUP_DIR)")
        parser.add_argument("--list", action="store_true", help="list the finished backups in WINNI_BACKUP_DIR")
        parser.add_argument("--verify", type=Path, metavar="PATH", help="check a backup's checksum against its manifest")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["list"]:
                for backup in backups.backup_list():
                    m = backup.manifest
                    self.stdout.write(f"{backup.path}\t{m['created_at']}\t{m['size_bytes']} bytes\t"
                                      f"{sum(m['row_counts'].values())} rows")
                return
            if options["verify"]:
                manifest = backups.backup_verify(path=options["verify"])
                self.stdout.write(f"ok: sha256 {manifest['sha256']}, {sum(manifest['row_counts'].values())} rows")
                return
            backup = backups.backup_create(out=options["out"], progress=self.stderr.write)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(str(backup.path))
