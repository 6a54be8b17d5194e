"""The corpus of real agent traffic (tests/data/traffic/, recorded by tests/record_traffic.py), read
the way the hook program reads its stdin: each recorded hook call becomes the body claude_hook.py
posts to POST /api/v1/capture/events (see its main()). Shared by tests/agents/test_real_traffic.py and
bench/traffic.py."""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents import dialects as agent_dialects
from agents import hook as claude_hook
from tests.support import ROOT

TRAFFIC = ROOT / "tests" / "data" / "traffic"
STABLE_ROOT = "/home/dev"
PROJECT_ROOT = "/home/dev/shop"
WINDOWS_ROOT = "C:\\Users\\dev"
# What the recording planted (tests/record_traffic.py).
FAKE_SECRET = "ghp_" + "Zq8RfL2mXw4Tb7Yc1Nv5Kp9Hd3Js6Ga0EuQi"
LATER_PROMPT = "How do we store money amounts in the invoice code?"
DECISION_WORDS = "integer cents"


def corpus_dirs() -> list[Path]:
    """Every recorded (or derived) agent folder: it holds a hooks.jsonl."""
    return sorted(path.parent for path in TRAFFIC.rglob("hooks.jsonl"))


def records(folder: Path) -> list[dict[str, Any]]:
    with (folder / "hooks.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv and argv.index(name) + 1 < len(argv) else None


@dataclass
class Call:
    """One recorded hook call and what the hook program posts for it (None: it posts nothing)."""

    agent: str
    raw: Any
    body: dict[str, Any] | None
    index: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def event(self) -> str | None:
        return self.body["payload"]["hook_event_name"] if self.body else None


# The scratch repository's root commit changes with each recording: a stable stand-in.
ROOT_COMMIT = "5a0c" + "0" * 36


def repository_of(cwd: Any) -> dict[str, Any]:
    """What the hook reads at `cwd` on the recording machine: the scratch repository `shop` (one
    commit, no remote)."""
    inside = isinstance(cwd, str) and (cwd == PROJECT_ROOT or cwd.startswith(PROJECT_ROOT + "/")
                                       or cwd.lower().startswith(f"{WINDOWS_ROOT}\\shop".lower()))
    if not inside:
        return {"git_root": None, "remote": None, "root_commit": None}
    root = f"{WINDOWS_ROOT}\\shop" if cwd.startswith("C:") else PROJECT_ROOT
    return {"git_root": root, "remote": None, "root_commit": ROOT_COMMIT}


def local_transcript(folder: Path, path: Any, scratch: Path) -> Any:
    """The recorded session file a payload's transcript_path names (it lives under sessions/)."""
    if not isinstance(path, str) or not path.startswith(STABLE_ROOT + "/"):
        return path
    saved = folder / "sessions" / path[len(STABLE_ROOT) + 1:]
    if not saved.exists():
        return path
    target = scratch / saved.relative_to(folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        shutil.copy(saved, target)
    return str(target)


def copilot_transcript_at(path: str, turns: int, scratch: Path) -> str:
    """Copilot's events file as it was when the `turns`-th prompt's Stop hook ran: every line before
    the next prompt (the hook reads the last turn's reply from the file)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines(keepends=True)
    kept, seen = [], 0
    for line in lines:
        if '"type": "user.message"' in line or '"type":"user.message"' in line:
            seen += 1
            if seen > turns:
                break
        kept.append(line)
    target = scratch / f"copilot-events-{turns}.jsonl"
    target.write_text("".join(kept), encoding="utf-8")
    return str(target)


def hook_calls(folder: Path, scratch: Path) -> list[Call]:
    """Every recorded hook call, in order, with the body the hook program would post for it."""
    scratch.mkdir(parents=True, exist_ok=True)
    state = str(scratch / "claude-hook-prompts.json")
    prompts: dict[str, int] = {}
    calls = []
    for index, record in enumerate(records(folder)):
        argv = record.get("argv") or []
        agent = option(argv, "--agent") or agent_dialects.CLAUDE
        raw = record.get("stdin")
        if not isinstance(raw, dict):
            calls.append(Call(agent, record.get("stdin_raw"), None, index))
            continue
        raw = dict(raw)
        for key in ("transcript_path", "transcriptPath"):
            if key in raw:
                raw[key] = local_transcript(folder, raw[key], scratch)
        name = agent_dialects.event_name(agent, raw, option(argv, "--event"))
        session = raw.get("session_id") or raw.get("sessionId")
        if agent == agent_dialects.COPILOT and agent_dialects.EVENTS[agent].get(name) == "Stop":
            path = raw.get("transcript_path") or raw.get("transcriptPath")
            if isinstance(path, str) and Path(path).exists():
                raw["transcript_path" if "transcript_path" in raw else "transcriptPath"] = copilot_transcript_at(
                    path, prompts.get(session, 0), scratch)
        payload = agent_dialects.normalize(agent, raw, option(argv, "--event"), state)
        if payload is None:
            calls.append(Call(agent, raw, None, index))
            continue
        if payload["hook_event_name"] == "UserPromptSubmit":
            prompts[session] = prompts.get(session, 0) + 1
        body = {
            "payload": payload,
            "event_id": f"{folder.name}-{index}",
            "captured_at": None,
            "git_branch": "main",
            "repository": repository_of(payload.get("cwd")),
            "agent": agent,
        }
        event = payload["hook_event_name"]
        if event == "UserPromptSubmit" or (event == "PostToolUse"
                                           and payload.get("tool_name") in claude_hook.FILE_TOOLS):
            body["recall"] = True
        calls.append(Call(agent, raw, body, index))
    return calls
