"""Backfill a coding agent's saved sessions: Claude Code's JSONL transcripts
(~/.claude/projects), Codex CLI's rollout files (~/.codex/sessions), Gemini CLI's saved chats
(~/.gemini/tmp/<project>/chats) or Copilot CLI's session events (~/.copilot/session-state); with
no PATH, the agent's own folder.

Why: sessions that ran before the hooks were installed, or while Winni was away for longer than
the hook's spool kept, are still on disk. Re-running is safe: each line's key is stored with its
messages and a line already imported adds nothing. Malformed lines are counted and skipped."""
from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO, cast

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from agents import capture
from agents import transcripts as agent_transcripts


class Command(BaseCommand):
    help = "Import a coding agent's saved sessions (Claude Code, Codex, Gemini CLI, Copilot CLI) into conversations."
    fixed_agent: str | None = None

    def add_arguments(self, parser: CommandParser) -> None:
        if self.fixed_agent is None:
            parser.add_argument("--agent", required=True, choices=agent_transcripts.IMPORTABLE,
                                help="whose sessions")
        parser.add_argument("paths", nargs="*" if self.fixed_agent is None else "+", metavar="PATH",
                            help="a transcript file or a folder of them (default: the agent's own folder)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        agent = self.fixed_agent or options["agent"]
        paths = options["paths"] or [str(agent_transcripts.default_folder(agent))]
        try:
            files = agent_transcripts.transcript_files(agent, paths)
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from exc
        total = capture.ImportStats(sessions=set())
        sizes = {path: path.stat().st_size for path in files}
        with tqdm(total=sum(sizes.values()), unit="B", unit_scale=True, disable=options["no_progress"],
                  file=cast(TextIO, self.stderr._out), desc="transcripts") as bar:
            for path in files:
                stats = agent_transcripts.import_file(agent, Path(path))
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
