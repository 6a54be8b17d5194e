"""`install_claude_hooks`: the earlier name of `install_agent_hooks --agent claude` (kept as an
alias). Writes Winni's capture hooks into Claude Code's settings JSON (user or project), the hook's
config file (URL, token; mode 600), and prints the `claude mcp add` line for the MCP tools."""
from agents.dialects import CLAUDE
from agents.install import HOOK_SCRIPT
from agents.management.commands.install_agent_hooks import Command as AgentCommand

__all__ = ["HOOK_SCRIPT", "Command"]


class Command(AgentCommand):
    help = "Write Winni's capture hooks into Claude Code's settings (user or project) and print the MCP line."
    fixed_agent = CLAUDE
