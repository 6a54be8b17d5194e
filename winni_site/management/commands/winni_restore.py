"""Restore a backup made by winni_backup. The checksum is verified first; the backup is restored
into a new database that replaces the current one only once complete, so a failed restore leaves
the old data untouched. Stop the web server and workers first: their connections are closed."""
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import ApplicationError
from winni_site import backups


class Command(BaseCommand):
    help = "Replace the database with a backup (refuses a database holding data without --force)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="a .dump file written by winni_backup (its manifest beside it)")
        parser.add_argument("--force", action="store_true", help="replace a database that holds data")
        parser.add_argument("--keep-old", action="store_true",
                            help="keep the replaced database under the name <name>_before_restore_<time>")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            manifest = backups.backup_restore(
                path=options["path"], force=bool(options["force"]), keep_old=bool(options["keep_old"]),
                progress=self.stderr.write,
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"restored {options['path']} ({sum(manifest['row_counts'].values())} rows, "
                          f"backup of {manifest['created_at']})")
