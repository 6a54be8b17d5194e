"""Purge rows older than WINNI_RETENTION_DAYS_<STORE> (conversations, fiedler results, cache
entries; 0 = keep forever). Beat runs it daily; memories, medallions and startup contexts are
never purged. --dry-run shows what would go."""
from django.core.management.base import BaseCommand, CommandParser

from winni_site import maintenance


class Command(BaseCommand):
    help = "Delete rows past their store's retention (WINNI_RETENTION_DAYS_*); --dry-run only counts them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="count what would be deleted, delete nothing")

    def handle(self, *args: object, **options: object) -> None:
        dry_run = bool(options["dry_run"])
        for store, entry in maintenance.retention_purge(dry_run=dry_run).items():
            if not entry["days"]:
                self.stdout.write(f"{store}: kept forever (retention off)")
                continue
            verb = "would delete" if dry_run else "deleted"
            self.stdout.write(f"{store}: {verb} {entry['rows']} older than {entry['days']} days (before {entry['cutoff']})")
