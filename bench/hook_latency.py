"""What Claude Code waits for on a prompt (UserPromptSubmit: the capture and the automatic recall
block), through a running Winni: the command hook (a new `python3 -I -S agents/hook.py`
process: start-up, the capture + recall request, printing) and the http hook's request (the hook
input posted to /api/v1/capture/hook on a new connection). bench/autorecall.py (LoCoMo questions)
and bench/memory.py (the realistic corpus at scale) both time it here."""
from __future__ import annotations

import http.client
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

KINDS = ("command", "http")


def draws(count: int, questions: list[tuple[str, str]], generic: list[str], cwds: list[str],
          seed: int = 3) -> dict[str, list[tuple[str, str]]]:
    """(prompt, cwd) per hook type: even prompts a question asked in its project's folder (`questions`:
    (prompt, cwd)), odd ones a generic prompt (`generic`) in a folder drawn from `cwds`. Each hook
    type gets its own draw (the same prompt twice would find its first capture)."""
    rng = random.Random(seed)
    return {kind: [rng.choice(questions) if i % 2 == 0 else (rng.choice(generic), rng.choice(cwds))
                   for i in range(count)] for kind in KINDS}


def _post(host: str, port: int, token: str, payload: dict[str, Any], timeout: float) -> str:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", "/api/v1/capture/hook", body=json.dumps(payload),
                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def hook_latency(*, url: str, token: str, prompts: dict[str, list[tuple[str, str]]],
                 warm: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    """Time every (prompt, cwd) of `prompts[kind]` through hook type `kind` (command, http),
    alternating the two types; each prompt is a new session's (`latency-…` session ids: the caller
    deletes them afterwards, see cleanup). `warm`: prompts sent first, not timed (the server's
    first requests load the embedding model). Returns, per kind, the samples (ms) and how many
    prompts received a block."""
    from tqdm import tqdm

    from agents.management.commands.install_claude_hooks import HOOK_SCRIPT

    run = uuid.uuid4().hex[:8]
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    home = Path(tempfile.mkdtemp(prefix="winni-bench-hook-"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "WINNI_URL": url, "WINNI_TOKEN": token,
           "WINNI_HOOK_SPOOL": str(home / "spool.jsonl"), "WINNI_HOOK_LOG": str(home / "hook.log"),
           "WINNI_HOOK_TIMEOUT": "5"}
    for index, (prompt, cwd) in enumerate(warm):
        _post(host, port, token, {"session_id": f"latency-warm-{run}-{index}", "hook_event_name": "UserPromptSubmit",
                                  "prompt": prompt, "cwd": cwd}, timeout=180)
    count = min(len(values) for values in prompts.values())
    result: dict[str, dict[str, Any]] = {kind: {"samples": [], "injected": 0} for kind in prompts}
    for index in tqdm(range(count), desc="hook latency", unit="prompt"):
        for kind in prompts:
            prompt, cwd = prompts[kind][index]
            payload = {"session_id": f"latency-{kind}-{run}-{index}", "hook_event_name": "UserPromptSubmit",
                       "prompt": prompt, "cwd": cwd}
            began = time.perf_counter()
            if kind == "command":
                out = subprocess.run([sys.executable, "-I", "-S", str(HOOK_SCRIPT)], input=json.dumps(payload),
                                     capture_output=True, text=True, env=env, timeout=30).stdout
            else:
                out = _post(host, port, token, payload, timeout=10)
            result[kind]["samples"].append((time.perf_counter() - began) * 1000)
            result[kind]["injected"] += "additionalContext" in out
    if (home / "spool.jsonl").exists() and (home / "spool.jsonl").stat().st_size:
        print(f"warning: the command hook spooled events ({home / 'spool.jsonl'}): the server did not answer in time")
    else:
        shutil.rmtree(home, ignore_errors=True)
    return result


def cleanup() -> None:
    """Delete the sessions and injections the timed prompts left (in the bench's Django process)."""
    from agents.models import Injection
    from conversations.models import Conversation

    Conversation.objects.filter(session_id__startswith="latency-").delete()
    Injection.objects.filter(session_id__startswith="latency-").delete()


def report(result: dict[str, dict[str, Any]], what: str) -> None:
    from bench._django import percentiles

    print(f"\nhook latency, {what}:")
    for kind, found in result.items():
        p50, p95 = percentiles(found["samples"])
        print(f"  {kind}: p50 {p50:.1f} ms, p95 {p95:.1f} ms, {found['injected']} of {len(found['samples'])} injected")
