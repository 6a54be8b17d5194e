"""`./winni doctor` (winni_site/doctor.py): what each coding agent with Winni's hooks installed
receives from them, and what is misconfigured, with the commands that fix it."""
import os
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from winni_site import doctor


class Command(BaseCommand):
    help = "Send a synthetic prompt through each installed agent hook and show what the agent would receive."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--prompt", default=doctor.PROMPT, help="the prompt sent through the hooks")
        parser.add_argument("--project", metavar="DIR",
                            help="the hooks installed in project DIR (default: the ones in your home)")
        parser.add_argument("--cwd", help="the folder the synthetic prompt comes from (default: --project, else "
                                          "the current folder)")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Path(options["project"]).expanduser().resolve() if options["project"] else None
        host = "127.0.0.1" if settings.WINNI_HOST in ("0.0.0.0", "::") else settings.WINNI_HOST
        status = doctor.doctor(home=Path.home(), project=project, cwd=options["cwd"] or str(project or os.getcwd()),
                               prompt=options["prompt"], default_url=f"http://{host}:{settings.WINNI_PORT}",
                               write=self.stdout.write)
        self.stdout.flush()
        sys.exit(status)
