"""`import_claude_transcripts PATH...`: the earlier name of `import_agent_transcripts --agent claude`
(kept as an alias). Backfills Claude Code JSONL transcripts (~/.claude/projects/<project>/<session>.jsonl);
re-running is safe, malformed lines are counted and skipped."""
from agents.dialects import CLAUDE
from agents.management.commands.import_agent_transcripts import Command as AgentCommand


class Command(AgentCommand):
    help = "Import Claude Code JSONL transcripts (files or folders) into conversations, idempotently."
    fixed_agent = CLAUDE
