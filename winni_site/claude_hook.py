#!/usr/bin/env python3
"""The hook program's earlier path, which hooks installed before it moved to agents/ still run
(`python3 -I -S …/winni_site/claude_hook.py`): runs agents/hook.py as if it had been started. Run
`manage.py install_agent_hooks` again to point the hooks at agents/hook.py. Standard library only."""
import os
import runpy

if __name__ == "__main__":
    runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agents", "hook.py"),
                   run_name="__main__")
