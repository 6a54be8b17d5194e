"""VACUUM (ANALYZE) every table, after expiring what has outlived its TTL (e.g. cache entries);
prints table and index sizes before and after (seed 000 NFR-1.5)."""
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import ApplicationError
from winni_site import maintenance


def _mb(size: int) -> str:
    return f"{size / 1048576:.2f} MB"


class Command(BaseCommand):
    help = "Expire entries past their TTL, then VACUUM (ANALYZE); shows sizes before and after."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--full", action="store_true", help="VACUUM FULL: rewrites tables, locks them meanwhile")

    def handle(self, *args: object, **options: object) -> None:
        self.stderr.write("vacuuming…")
        try:
            report = maintenance.vacuum_run(full=bool(options["full"]))
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc
        for name, count in report["expired"].items():
            self.stdout.write(f"expired {count} {name}")
        self.stdout.write(f"{'table':40} {'table before':>14} {'table after':>14} {'index before':>14} {'index after':>14}")
        totals = [0, 0, 0, 0]
        for table, after in report["after"].items():
            before = report["before"].get(table, {"table_bytes": 0, "index_bytes": 0})
            row = [before["table_bytes"], after["table_bytes"], before["index_bytes"], after["index_bytes"]]
            totals = [a + b for a, b in zip(totals, row)]
            self.stdout.write(f"{table:40} " + " ".join(f"{_mb(v):>14}" for v in row))
        self.stdout.write(f"{'total':40} " + " ".join(f"{_mb(v):>14}" for v in totals))
