"""Record the corpus of real agent traffic in tests/data/traffic/ (docs/capture.md, "The traffic corpus").

    /work/main/.venv/bin/python -m tests.record_traffic [claude] [codex] [gemini] [copilot] [windows]

For each agent (all four when none is named) this installs a *recording* hook in a scratch HOME
(a tiny command that appends its argv and stdin to a JSONL file, registered for every hook event
the agent has, not only the ones Winni captures), makes a scratch git repository `shop` with a
few files (Python sources, a notebook, a PNG, a binary file, a Latin-1 file, a note outside the
repository), and drives the real CLI headless (the versions tests/claude_cli.py and
tests/agent_cli.py pin, installed with npm into .claude-cache/ and .agents-cache/) against the
suite's fake model servers, whose "model" is scripted here to call the agent's real tools on
absolute paths: read, edit, write, notebook edit, shell commands (with a `cd`, a non-UTF-8 output
and a >100 KB output), search, a subagent, a compaction, a prompt holding a fake secret, and a
second session asking about the first one's decision.

What it writes, per agent, under tests/data/traffic/<agent>-<version>/:
  hooks.jsonl   one line per hook call, in order: {"argv": [...], "stdin": <the payload>}
                ("stdin_raw" instead when the stdin was not JSON);
  sessions/     the CLI's own session files (Claude transcript JSONL, Codex rollouts, Gemini chats,
                Copilot events), at their path below HOME.
The scratch root (a temporary folder) is rewritten to /home/dev everywhere (paths, Claude's
dashed project folder names), so the files are stable and still real-shaped: the project is
/home/dev/shop. Strings longer than MAX_STRING characters are cut (the corpus stays small); the one
>100 KB tool output is kept whole.

Re-record after upgrading an agent (bump its version in tests/claude_cli.py or tests/agent_cli.py),
then run tests/agents/test_real_traffic.py. `windows` (run last, included when no agent is named) derives
tests/data/traffic/windows/: the Claude recording with its paths as Claude Code on Windows writes
them (C:\\Users\\dev\\shop\\...). It is derived, not recorded (there is no Windows machine here;
tests/data/traffic/README.md says so).
"""
from __future__ import annotations

import base64
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from tests.agent_cli import PACKAGES, agent_binary, base_env
from tests.claude_cli import CLAUDE_CODE_VERSION, claude_binary, claude_env
from tests.fake_anthropic import FakeAnthropic, prompt_of
from tests.fake_gemini import FakeGemini
from tests.fake_gemini import own_words as gemini_words
from tests.fake_openai import FakeOpenAI, _texts
from tests.fake_openai import own_words as openai_words
from tests.support import ROOT

OUT = ROOT / "tests" / "data" / "traffic"
STABLE_ROOT = "/home/dev"
# Longer strings are cut in the fixtures; the long tool output (LONG_OUTPUT_CHARS) stays whole.
MAX_STRING = 8_000
LONG_OUTPUT_CHARS = 120_000
KEEP_WHOLE = 130_000
# A GitHub token in the shape detect-secrets knows: capture must scrub it from everything it stores.
FAKE_SECRET = "ghp_" + "Zq8RfL2mXw4Tb7Yc1Nv5Kp9Hd3Js6Ga0EuQi"
DECISION_PROMPT = ("We decided: money amounts in src/invoice.py are integer cents, never floats, because the "
                   "tax report had rounding bugs. Keep that in mind.")
DECISION_REPLY = "Noted: invoice amounts stay integer cents in src/invoice.py; floats are never used for money."
LONG_CSV = "invoice,amount_cents\n" + "".join(f"INV-{n:06d},{n * 137 % 100000}\n" for n in range(7000))
SECRET_PROMPT = f"Deploy to staging with the token {FAKE_SECRET} and tell me what you did."
LATER_PROMPT = "How do we store money amounts in the invoice code?"

HOOK_PROGRAM = r'''import json, sys, time
raw = sys.stdin.buffer.read()
record = {"argv": sys.argv[2:], "at": time.time()}
try:
    record["stdin"] = json.loads(raw.decode("utf-8"))
except ValueError:
    record["stdin_raw"] = raw.decode("utf-8", "surrogateescape")
with open(sys.argv[1], "a", encoding="utf-8") as handle:
    handle.write(json.dumps(record) + "\n")
'''

INVOICE = '''"""Invoices: totals in integer cents."""


def total(lines):
    return round(sum(line.price * line.quantity for line in lines), 2)
'''
NOTEBOOK = {"cells": [{"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Tax report\n"]},
                      {"cell_type": "code", "execution_count": None, "id": "totals", "metadata": {}, "outputs": [],
                       "source": ["print(1 + 1)\n"]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
# A 1×1 transparent PNG.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


def make_scratch(root: Path) -> Path:
    """HOME = root, the repository root/shop (git, branch main), a note outside it."""
    shop = root / "shop"
    (shop / "src" / "billing").mkdir(parents=True)
    (shop / "notebooks").mkdir()
    (shop / "assets").mkdir()
    (shop / "data").mkdir()
    (shop / "src" / "invoice.py").write_text(INVOICE)
    (shop / "src" / "billing" / "__init__.py").write_text("")
    (shop / "notebooks" / "report.ipynb").write_text(json.dumps(NOTEBOOK, indent=1))
    (shop / "assets" / "logo.png").write_bytes(PNG)
    (shop / "data" / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (shop / "data" / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me: 12,50 \x80\n".encode("latin-1", "replace"))
    (shop / ".env.example").write_text(f"GITHUB_TOKEN={FAKE_SECRET}\n")
    (root / "notes").mkdir()
    (root / "notes" / "todo.md").write_text("- ask about the EU VAT rule\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(shop)], check=True)
    subprocess.run(["git", "-C", str(shop), "add", "."], check=True)
    subprocess.run(["git", "-C", str(shop), "-c", "user.name=dev", "-c", "user.email=dev@example.com",
                    "commit", "-q", "-m", "shop"], check=True)
    return shop


def hook_command(root: Path, agent: str, event: str) -> str:
    # Named like Winni's hook program: the installer (and Codex's trust keys) recognise it by that name.
    program = root / ".record" / "claude_hook.py"
    if not program.exists():
        program.parent.mkdir(parents=True, exist_ok=True)
        program.write_text(HOOK_PROGRAM)
    return " ".join(shlex.quote(p) for p in [sys.executable, "-I", "-S", str(program),
                                              str(root / ".record" / "hooks.jsonl"), "--agent", agent,
                                              "--event", event])


# --- the scripted model ---------------------------------------------------------------------------


class Script:
    """Tool calls the fake model makes for a prompt, one per model request, then a reply."""

    def __init__(self, steps: dict[str, list[tuple[str, dict]]], replies: dict[str, str] | None = None):
        self.steps = steps
        self.replies = replies or {}

    def find(self, prompt: str) -> tuple[list[tuple[str, dict]], str | None]:
        for key, steps in self.steps.items():
            if key and key in prompt:
                return steps, None
        for key, reply in self.replies.items():
            if key in prompt:
                return [], reply
        return [], None


class ScriptedAnthropic(FakeAnthropic):
    def __init__(self, script: Script):
        super().__init__()
        self.script = script
        self.lock = threading.Lock()

    def answer(self, body: dict) -> list[dict]:
        messages = body.get("messages") or []
        start, prompt = 0, ""
        for index in range(len(messages) - 1, -1, -1):
            content = messages[index].get("content")
            is_result = isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)
            if messages[index].get("role") == "user" and not is_result:
                start, prompt = index, prompt_of(content)
                break
        done = sum(1 for m in messages[start + 1:] if m.get("role") == "assistant")
        steps, reply = self.script.find(prompt)
        if body.get("tools") and done < len(steps):
            with self.lock:
                self.counter += 1
                ident = f"toolu_rec_{self.counter:03d}"
            name, tool_input = steps[done]
            return [{"type": "text", "text": f"Step {done + 1}: {name}."},
                    {"type": "tool_use", "id": ident, "name": name, "input": tool_input}]
        if done:
            last = messages[-1].get("content")
            said = json.dumps(last)[:200] if not isinstance(last, str) else last[:200]
            return [{"type": "text", "text": f"Done with {prompt[:60]!r}. Last tool result began: {said}"}]
        return [{"type": "text", "text": reply or f"Reply to: {prompt}"}]


# --- output ---------------------------------------------------------------------------------------


def stable(text: str, root: Path) -> str:
    """The scratch root rewritten to STABLE_ROOT, in plain and in Claude's dashed folder form."""
    real = str(root)
    text = text.replace(real, STABLE_ROOT)
    return text.replace(real.replace("/", "-").replace(".", "-").replace("_", "-"),
                        STABLE_ROOT.replace("/", "-"))


def cut(value: Any, keep: bool = False) -> Any:
    """Strings over MAX_STRING cut; with `keep` (a PostToolUse payload) those up to KEEP_WHOLE stay
    whole: the long tool output is kept once, where capture reads it."""
    if isinstance(value, str):
        if len(value) > (KEEP_WHOLE if keep else MAX_STRING):
            return value[:MAX_STRING] + f"\n[cut by tests/record_traffic.py: {len(value) - MAX_STRING} more characters]"
        return value
    if isinstance(value, list):
        return [cut(v, keep) for v in value]
    if isinstance(value, dict):
        return {k: cut(v, keep) for k, v in value.items()}
    return value


def is_post_tool_use(record: Any) -> bool:
    stdin = record.get("stdin") if isinstance(record, dict) else None
    return isinstance(stdin, dict) and stdin.get("hook_event_name") in ("PostToolUse", "AfterTool", "postToolUse")


def save_jsonl_text(text: str, root: Path, target: Path) -> None:
    lines = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(stable(line, root))
            lines.append(json.dumps(cut(record, is_post_tool_use(record)), ensure_ascii=False))
        except ValueError:
            lines.append(stable(line, root))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogateescape")


def snapshot(root: Path, session_globs: list[str]) -> None:
    """Copy the session files as they are now into root/.record/keep/ (an agent may remove a file
    later: Gemini CLI rewrites a resumed chat under a new name and deletes the old one)."""
    for pattern in session_globs:
        for path in root.glob(pattern):
            if path.is_file():
                target = root / ".record" / "keep" / path.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)


def save(agent_dir: Path, root: Path, session_globs: list[str]) -> None:
    if agent_dir.exists():
        shutil.rmtree(agent_dir)
    agent_dir.mkdir(parents=True)
    save_jsonl_text((root / ".record" / "hooks.jsonl").read_text(encoding="utf-8"), root, agent_dir / "hooks.jsonl")
    snapshot(root, session_globs)
    kept = root / ".record" / "keep"
    for pattern in session_globs:
        for path in sorted(kept.glob(pattern)):
            if not path.is_file():
                continue
            relative = Path(stable(str(path.relative_to(kept)), root))
            target = agent_dir / "sessions" / relative
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            if path.suffix == ".jsonl":
                save_jsonl_text(text, root, target)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    data = cut(json.loads(stable(text, root)))
                    target.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
                except ValueError:
                    target.write_text(stable(text, root), encoding="utf-8", errors="surrogateescape")
    size = sum(p.stat().st_size for p in agent_dir.rglob("*") if p.is_file())
    print(f"{agent_dir.relative_to(ROOT)}: {size // 1024} KB")


def run(binary: Path, args: list[str], *, cwd: Path, env: dict[str, str], check: bool = True,
        stdin: str = "") -> subprocess.CompletedProcess:
    done = subprocess.run([str(binary), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          input=stdin)
    if check and done.returncode != 0:
        raise SystemExit(f"{binary.name} {args[:6]} failed ({done.returncode}): {done.stdout[-1500:]} "
                         f"{done.stderr[-1500:]}")
    return done


# --- Claude Code ----------------------------------------------------------------------------------

CLAUDE_EVENTS = ["SessionStart", "UserPromptSubmit", "UserPromptExpansion", "PreToolUse", "PostToolUse",
                 "PostToolUseFailure", "PostToolBatch", "SubagentStart", "SubagentStop", "Stop", "StopFailure",
                 "PreCompact", "PostCompact", "SessionEnd", "Notification", "PermissionDenied"]
SUBAGENT_PROMPT = "Find where the invoice total is rounded in src/invoice.py and report the line."


def record_claude(root: Path) -> None:
    shop = make_scratch(root)
    inv, tax, nb = shop / "src" / "invoice.py", shop / "src" / "billing" / "tax.py", shop / "notebooks" / "report.ipynb"
    script = Script({
        "Fix the rounding": [
            ("Read", {"file_path": str(inv)}),
            ("Edit", {"file_path": str(inv), "old_string": "round(sum(line.price * line.quantity for line in lines), 2)",
                      "new_string": "sum(line.price_cents * line.quantity for line in lines)"}),
            ("Write", {"file_path": str(tax), "content": '"""Tax in integer cents."""\n\nRATE_BASIS_POINTS = 2000\n'}),
            ("MultiEdit", {"file_path": str(tax), "edits": [{"old_string": "2000", "new_string": "1900"}]}),
            ("Read", {"file_path": str(nb)}),
            ("NotebookEdit", {"notebook_path": str(nb), "cell_id": "totals", "new_source": "print(total([]))\n",
                              "edit_mode": "replace"}),
            ("Read", {"file_path": str(root / "notes" / "todo.md")}),
        ],
        "Run the checks": [
            # Claude Code keeps 30,000 characters of a command's output in the hook (the rest goes
            # to a file it names): the >100 KB payload is a Write of a long file.
            ("Write", {"file_path": str(shop / "data" / "fixtures.csv"), "content": LONG_CSV}),
            ("Bash", {"command": "grep -rn cents src | head", "description": "Find the cents"}),
            ("Bash", {"command": f"python3 -c \"print('x' * {LONG_OUTPUT_CHARS})\"", "description": "A long output"}),
            ("Bash", {"command": "cat data/latin1.txt; printf 'raw \\xff\\xfe bytes\\n'", "description": "Latin-1"}),
            ("Grep", {"pattern": "cents", "path": str(shop / "src")}),
            ("Glob", {"pattern": "**/*.py"}),
            ("Bash", {"command": "cd src/billing && pwd", "description": "Change directory"}),
            ("Bash", {"command": "ls", "description": "List here"}),
        ],
        "Look at the logo": [
            ("Read", {"file_path": str(shop / "assets" / "logo.png")}),
            ("Read", {"file_path": str(shop / "data" / "blob.bin")}),
        ],
        "Ask a subagent": [
            ("Agent", {"description": "Find the rounding", "prompt": SUBAGENT_PROMPT,
                       "subagent_type": "general-purpose"}),
        ],
        SUBAGENT_PROMPT: [("Read", {"file_path": str(inv)})],
        "Deploy to staging": [("Bash", {"command": "cat .env.example", "description": "Show the settings"})],
    }, {DECISION_PROMPT[:40]: DECISION_REPLY})
    fake = ScriptedAnthropic(script)
    try:
        (root / ".claude").mkdir()
        hooks = {event: [{"hooks": [{"type": "command", "command": hook_command(root, "claude", event),
                                     "timeout": 10}]}] for event in CLAUDE_EVENTS}
        for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
            hooks[event][0]["matcher"] = "*"
        (root / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
        env = claude_env(root, fake.url)
        binary = claude_binary()
        first, second = str(uuid.uuid4()), str(uuid.uuid4())
        tools = "--allowedTools=Read,Edit,Write,MultiEdit,NotebookEdit,Bash,Grep,Glob,Agent,Task"
        run(binary, ["-p", "--session-id", first, tools, DECISION_PROMPT], cwd=shop, env=env)
        for prompt in ("Fix the rounding in the invoice total and add a tax module.",
                       "Run the checks: search the code for cents and print the data file.",
                       "Look at the logo and the binary dump.",
                       "Ask a subagent where the total is rounded.",
                       "/compact",
                       SECRET_PROMPT):
            done = run(binary, ["-p", "--resume", first, tools, prompt], cwd=shop, env=env, check=prompt != "/compact")
            if done.returncode:
                print(f"claude {prompt!r}: exit {done.returncode}: {done.stderr[-300:]}")
        run(binary, ["-p", "--session-id", second, tools, LATER_PROMPT], cwd=shop, env=env)
    finally:
        fake.stop()
    save(OUT / f"claude-{CLAUDE_CODE_VERSION}", root, [".claude/projects/**/*.jsonl"])


# --- Codex, Gemini CLI, Copilot CLI ---------------------------------------------------------------


class ScriptedOpenAI(FakeOpenAI):
    """Codex (Responses API) and Copilot (Chat Completions): a tool named by a substring of its name."""

    def __init__(self, script: Script):
        super().__init__()
        self.script = script
        self.offered: list[str] = []

    def _named(self, tools: list[dict], want: str) -> dict | None:
        self.offered = sorted({t.get("name") or (t.get("function") or {}).get("name") or "" for t in tools or []})
        for tool in tools or []:
            name = tool.get("name") or (tool.get("function") or {}).get("name") or ""
            if name == want:
                return tool
        return None

    def responses_answer(self, body: dict) -> list[dict]:
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        start = max((n for n, i in enumerate(items) if i.get("role") == "user"
                     and openai_words(_texts(i.get("content")))), default=0)
        prompt = openai_words(_texts(items[start].get("content"))) if items else ""
        done = sum(1 for i in items[start + 1:] if i.get("type") in ("function_call", "custom_tool_call"))
        steps, reply = self.script.find(prompt)
        steps = [step for step in steps if self._named(body.get("tools") or [], step[0]) is not None]
        if done < len(steps):
            name, args = steps[done]
            return [{"type": "function_call", "id": f"fc_{self.next_id()}", "call_id": f"call_{self.next_id()}",
                     "name": name, "arguments": json.dumps(args), "status": "completed"}]
        if done:
            return [self._message(f"Done with {prompt[:60]!r}.")]
        return [self._message(reply or f"Reply to: {prompt}")]

    def chat_answer(self, body: dict) -> dict:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        start = max((n for n, m in enumerate(messages) if m.get("role") == "user"
                     and openai_words(_texts(m.get("content")))), default=0)
        prompt = openai_words(_texts(messages[start].get("content"))) if messages else ""
        done = sum(len(m.get("tool_calls") or []) for m in messages[start + 1:] if m.get("role") == "assistant")
        steps, reply = self.script.find(prompt)
        steps = [step for step in steps if self._named(body.get("tools") or [], step[0]) is not None]
        if done < len(steps):
            name, args = steps[done]
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{self.next_id()}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)}}]}
        if done:
            return {"role": "assistant", "content": f"Done with {prompt[:60]!r}."}
        return {"role": "assistant", "content": reply or f"Reply to: {prompt}"}


class ScriptedGemini(FakeGemini):
    def __init__(self, script: Script):
        super().__init__()
        self.script = script
        self.offered: list[str] = []

    def answer(self, body: dict) -> dict:
        config = body.get("generationConfig") or body.get("config") or {}
        if config.get("responseMimeType") == "application/json" or config.get("responseJsonSchema"):
            return super().answer(body)
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        start = max((n for n, c in enumerate(contents) if c.get("role") == "user"
                     and gemini_words(c.get("parts") or [])), default=0)
        prompt = gemini_words(contents[start].get("parts") or []) if contents else ""
        done = sum(1 for c in contents[start + 1:] for p in c.get("parts") or [] if "functionCall" in p)
        names = {d.get("name") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []}
        self.offered = sorted(n for n in names if n)
        steps, reply = self.script.find(prompt)
        steps = [step for step in steps if step[0] in names]
        if done < len(steps):
            name, args = steps[done]
            return self._response([{"functionCall": {"name": name, "args": args}}])
        if done:
            return self._response([{"text": f"Done with {prompt[:60]!r}."}])
        return self._response([{"text": reply or f"Reply to: {prompt}"}])


def other_steps(agent: str, shop: Path, root: Path) -> dict[str, list[tuple[str, dict]]]:
    inv = str(shop / "src" / "invoice.py")
    if agent == "codex":
        return {"Fix the rounding": [
            ("exec_command", {"cmd": f"cat {inv}"}),
            ("exec_command", {"cmd": "cd src && pwd && ls", "workdir": str(shop)}),
            ("exec_command", {"cmd": "cat data/latin1.txt; printf 'raw \\xff bytes\\n'", "workdir": str(shop)}),
            ("exec_command", {"cmd": f"python3 -c \"print('x' * {LONG_OUTPUT_CHARS})\""}),
            ("exec_command", {"cmd": f"cat {root / 'notes' / 'todo.md'}"}),
            ("view_image", {"path": str(shop / "assets" / "logo.png")}),
            ("exec_command", {"cmd": "cat .env.example"}),
        ]}
    if agent == "gemini":
        return {"Fix the rounding": [
            ("read_file", {"file_path": inv, "absolute_path": inv}),
            ("replace", {"file_path": inv, "old_string": "round(", "new_string": "int(round(",
                         "instruction": "integer cents"}),
            ("write_file", {"file_path": str(shop / "src" / "billing" / "tax.py"), "content": "RATE = 1900\n"}),
            ("run_shell_command", {"command": "cat data/latin1.txt; printf 'raw \\xff bytes\\n'",
                                   "description": "Latin-1"}),
            ("run_shell_command", {"command": f"python3 -c \"print('x' * {LONG_OUTPUT_CHARS})\""}),
            ("read_file", {"file_path": str(shop / "assets" / "logo.png"),
                           "absolute_path": str(shop / "assets" / "logo.png")}),
            ("glob", {"pattern": "**/*.py"}),
            ("search_file_content", {"pattern": "cents"}),
            ("grep_search", {"pattern": "cents"}),
            ("read_file", {"file_path": str(root / "notes" / "todo.md"),
                           "absolute_path": str(root / "notes" / "todo.md")}),
        ]}
    return {"Fix the rounding": [  # copilot
        ("view", {"path": inv}),
        ("str_replace_editor", {"command": "view", "path": inv}),
        ("edit", {"path": inv, "old_str": "round(", "new_str": "int(round("}),
        ("create", {"path": str(shop / "src" / "billing" / "tax.py"), "file_text": "RATE = 1900\n"}),
        ("bash", {"command": "cat data/latin1.txt; printf 'raw \\xff bytes\\n'", "description": "Latin-1",
                  "sessionId": "rec", "async": False}),
        ("bash", {"command": f"python3 -c \"print('x' * {LONG_OUTPUT_CHARS})\"", "description": "long",
                  "sessionId": "rec", "async": False}),
        ("glob", {"pattern": "**/*.py"}),
        ("grep", {"pattern": "cents"}),
        ("view", {"path": str(root / "notes" / "todo.md")}),
    ]}


FIX_PROMPT = "Fix the rounding in the invoice total and add a tax module."


def install_other(agent: str, root: Path) -> None:
    """The recording hook in the agent's own config, the way install_agent_hooks writes Winni's
    (agent_install's plan), for every event the agent has; no MCP server."""
    from agents import dialects as agent_dialects
    from agents import install as agent_install

    events = {"codex": ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact"],
              "gemini": ["SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel",
                         "BeforeToolSelection", "BeforeTool", "AfterTool", "PreCompress", "Notification"],
              "copilot": ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact",
                          "SessionEnd", "SubagentStop", "ErrorOccurred"]}[agent]
    saved = agent_dialects.INSTALLED_EVENTS[agent]
    agent_dialects.INSTALLED_EVENTS[agent] = events
    try:
        target = agent_install.Target(agent=agent, project=None, home=root, url="http://127.0.0.1:9", token="x",
                                      hook=lambda event: hook_command(root, agent, event))
        agent_install.apply(agent_install.plan(target))
    finally:
        agent_dialects.INSTALLED_EVENTS[agent] = saved
    # No MCP server: nothing answers there.
    if agent == "gemini":
        path = root / ".gemini" / "settings.json"
        data = json.loads(path.read_text())
        data.pop("mcpServers", None)
        data.setdefault("security", {}).setdefault("auth", {})["selectedType"] = "gemini-api-key"
        path.write_text(json.dumps(data, indent=2))
    elif agent == "copilot":
        (root / ".copilot" / "mcp-config.json").unlink(missing_ok=True)
    elif agent == "codex":
        import tomlkit

        path = root / ".codex" / "config.toml"
        doc = tomlkit.parse(path.read_text())
        doc.pop("mcp_servers", None)
        path.write_text(tomlkit.dumps(doc))


def record_other(agent: str, root: Path) -> None:
    shop = make_scratch(root)
    for folder in (".codex", ".gemini", ".copilot"):
        (root / folder).mkdir(exist_ok=True)
    install_other(agent, root)
    script = Script(other_steps(agent, shop, root), {DECISION_PROMPT[:40]: DECISION_REPLY})
    fake: Any = ScriptedGemini(script) if agent == "gemini" else ScriptedOpenAI(script)
    binary = agent_binary(agent)
    prompts = [DECISION_PROMPT, FIX_PROMPT, SECRET_PROMPT]
    try:
        if agent == "codex":
            provider = f'{{name="fake", base_url="{fake.url}/v1", wire_api="responses"}}'
            common = ["--json", "--skip-git-repo-check", "-c", "model_provider=fake", "-c",
                      f"model_providers.fake={provider}", "-c", "model=fake-model", "-c", 'approval_policy="never"',
                      "-c", 'sandbox_mode="danger-full-access"']
            env = base_env(root)
            out = run(binary, ["exec", *common, prompts[0]], cwd=shop, env=env).stdout
            session = next(json.loads(line)["thread_id"] for line in out.splitlines()
                           if line.startswith("{") and json.loads(line).get("type") == "thread.started")
            for prompt in prompts[1:]:
                run(binary, ["exec", "resume", *common, session, prompt], cwd=shop, env=env)
            run(binary, ["exec", *common, LATER_PROMPT], cwd=shop, env=env)
            globs = [".codex/sessions/**/*.jsonl"]
        elif agent == "gemini":
            env = base_env(root, GEMINI_API_KEY="fake", GOOGLE_GEMINI_BASE_URL=fake.url,
                           GEMINI_CLI_TRUST_WORKSPACE="true")
            common = ["-m", "gemini-fake", "--approval-mode", "yolo"]
            globs = [".gemini/tmp/*/chats/*", ".gemini/tmp/*/.project_root"]
            run(binary, ["--session-id", str(uuid.uuid4()), *common, "-p", prompts[0]], cwd=shop, env=env)
            snapshot(root, globs)
            for prompt in prompts[1:]:
                run(binary, ["--resume", "latest", *common, "-p", prompt], cwd=shop, env=env)
                snapshot(root, globs)
            run(binary, ["--session-id", str(uuid.uuid4()), *common, "-p", LATER_PROMPT], cwd=shop, env=env)
        else:
            import re

            env = base_env(root, COPILOT_OFFLINE="true", COPILOT_PROVIDER_BASE_URL=f"{fake.url}/v1",
                           COPILOT_PROVIDER_TYPE="openai", COPILOT_PROVIDER_API_KEY="fake", COPILOT_MODEL="fake-model",
                           COPILOT_AUTO_UPDATE="false")
            first = run(binary, ["-p", prompts[0], "--allow-all-tools"], cwd=shop, env=env)
            session = re.search(r"--resume=([0-9a-f-]{36})", first.stdout + first.stderr).group(1)
            for prompt in prompts[1:]:
                run(binary, [f"--resume={session}", "-p", prompt, "--allow-all-tools", "--allow-all-paths"],
                    cwd=shop, env=env)
            run(binary, ["-p", LATER_PROMPT, "--allow-all-tools"], cwd=shop, env=env)
            globs = [".copilot/session-state/*/events.jsonl"]
        print(f"{agent}: tools offered: {', '.join(fake.offered)}")
    finally:
        fake.stop()
    save(OUT / f"{agent}-{PACKAGES[agent][1]}", root, globs)


# --- the Windows-shaped variant (derived, not recorded) ----------------------------------------------

WINDOWS_ROOT = "C:\\Users\\dev"
WINDOWS_DIR = OUT / "windows" / f"claude-{CLAUDE_CODE_VERSION}-windows"
# The recorded Claude Code events kept in the variant: the decision, the file edits, the later
# question (not the long outputs, nor the events Winni does not capture).
WINDOWS_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd")


def windows_path(text: str) -> str:
    """/home/dev/... → C:\\Users\\dev\\... (every occurrence), and Claude's dashed project folder
    -home-dev-shop → C--Users-dev-shop (what Claude Code makes of C:\\Users\\dev\\shop)."""
    import re

    text = text.replace("-home-dev-", "C--Users-dev-")
    return re.sub(r"/home/dev((?:/[^\s\"'/:]+)*)", lambda m: WINDOWS_ROOT + m.group(1).replace("/", "\\"), text)


def windowsify(value: Any) -> Any:
    if isinstance(value, str):
        return windows_path(value)
    if isinstance(value, list):
        return [windowsify(v) for v in value]
    if isinstance(value, dict):
        return {k: windowsify(v) for k, v in value.items()}
    return value


def derive_windows() -> None:
    """A Windows-shaped variant of the Claude Code recording: the same events with the paths
    (cwd, transcript_path, file paths in tool inputs and outputs) as Claude Code on Windows
    writes them. Derived: there is no Windows machine here (tests/data/traffic/README.md)."""
    source = OUT / f"claude-{CLAUDE_CODE_VERSION}" / "hooks.jsonl"
    kept = []
    for line in source.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        payload = record.get("stdin") or {}
        if payload.get("hook_event_name") not in WINDOWS_EVENTS:
            continue
        if len(line) > 20_000:  # the long outputs: the recording has them
            continue
        kept.append(json.dumps({**windowsify(record), "derived": "windows"}, ensure_ascii=False))
    WINDOWS_DIR.mkdir(parents=True, exist_ok=True)
    (WINDOWS_DIR / "hooks.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    print(f"{WINDOWS_DIR.relative_to(ROOT)}: {len(kept)} events")


def main(argv: list[str]) -> None:
    agents = argv or ["claude", "codex", "gemini", "copilot", "windows"]
    if "windows" in agents:
        agents.remove("windows")
        if agents:
            main(agents)
        derive_windows()
        return
    for agent in agents:
        # A short path: the embedded PostgreSQL and the CLIs' sockets dislike long ones.
        root = Path(tempfile.mkdtemp(prefix=f"rec-{agent}-", dir=os.environ.get("WINNI_RECORD_TMP") or "/tmp"))
        try:
            if agent == "claude":
                record_claude(root)
            else:
                record_other(agent, root)
        finally:
            if not os.environ.get("WINNI_RECORD_KEEP"):
                shutil.rmtree(root, ignore_errors=True)
            else:
                print(f"kept {root}")


if __name__ == "__main__":
    main(sys.argv[1:])
