"""Manage projects: `create NAME [--path P] [--remote URL]`, `list`, `rename PROJECT NAME`,
`merge A B [--dry-run]`, `recall PROJECT on|off` (automatic recall for its sessions).

Why: capture makes a project the first time a session runs in a repository (docs/projects.md),
so most users never need this. It is for the rest: a project made before its first session (to
give it a startup context), a name the user prefers, and two records that turn out to be one
repository (a clone whose remote changed, a copy without git history) — merge moves every row of
A into B, keeps A's keys and name as B's aliases, and deletes A."""
from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core import projects
from core.errors import ApplicationError


class Command(BaseCommand):
    help = "Create, list, rename or merge projects (the scope of conversations, memories, medallions, contexts)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a project (capture finds it by --path / --remote)")
        create.add_argument("name")
        create.add_argument("--path", help="the git root (or folder) it lives in")
        create.add_argument("--remote", help="its git remote URL (origin)")
        sub.add_parser("list", help="every project with its keys and rows per store")
        rename = sub.add_parser("rename", help="a new name and slug; the old slug stays an alias")
        rename.add_argument("project")
        rename.add_argument("name")
        merge = sub.add_parser("merge", help="move every row of project A into project B and delete A")
        merge.add_argument("source", metavar="A")
        merge.add_argument("target", metavar="B")
        merge.add_argument("--dry-run", action="store_true", help="say what would move, change nothing")
        recall = sub.add_parser("recall", help="automatic recall for the project's sessions (docs/autorecall.md)")
        recall.add_argument("project")
        recall.add_argument("state", choices=("on", "off"))

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except ApplicationError as exc:
            raise CommandError(exc.message) from exc

    def _create(self, options: dict[str, Any]) -> None:
        path = os.path.abspath(os.path.expanduser(options["path"])) if options["path"] else None
        project = projects.project_create(name=options["name"], path=path, remote=options["remote"])
        self.stdout.write(f"created project {project.slug} ({project.name})")

    def _list(self, options: dict[str, Any]) -> None:
        for project, counts in projects.project_list():
            keys = ", ".join(f"{key.kind}={key.value}" for key in project.keys.all()) or "no keys"
            rows = ", ".join(f"{label} {n}" for label, n in counts.items())
            self.stdout.write(f"{project.slug}\t{project.name}\tlast activity {project.last_activity_at:%Y-%m-%d %H:%M}"
                              f"\t{rows}\t{keys}")

    def _rename(self, options: dict[str, Any]) -> None:
        project = projects.project_rename(project=options["project"], name=options["name"])
        self.stdout.write(f"renamed to {project.slug} ({project.name})")

    def _merge(self, options: dict[str, Any]) -> None:
        moved = projects.project_merge(source=options["source"], target=options["target"], dry_run=options["dry_run"])
        rows = ", ".join(f"{label} {n}" for label, n in moved.items())
        verb = "would merge" if options["dry_run"] else "merged"
        self.stdout.write(f"{verb} {options['source']} into {options['target']}: {rows}")

    def _recall(self, options: dict[str, Any]) -> None:
        from agents import autorecall

        project = autorecall.project_recall_set(project=options["project"], enabled=options["state"] == "on")
        self.stdout.write(f"automatic recall {options['state']} for {project.slug}")
