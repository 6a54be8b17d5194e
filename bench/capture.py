"""Capture latency: the Claude Code hook program (a real `python3 -I -S agents/hook.py` process per
event, as Claude Code runs it) against a live Winni (uvicorn) on a fresh embedded database, with
Winni down (spooling), and the transcript importer's throughput.

    .venv/bin/python bench/capture.py [--events 200] [--import-lines 20000]

The data dir (default /tmp/winni-bench-capture) is wiped first."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
HOOK = ROOT / "agents" / "hook.py"
# What install_claude_hooks writes into the hook command: the real interpreter, not a pyenv shim.
PYTHON = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
SAMPLE = ROOT / "tests" / "data" / "claude-code-2.1.197-session.jsonl"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


def report(name: str, samples: list[float]) -> None:
    print(f"{name:<46} n={len(samples):<5} p50={percentile(samples, 50):7.1f} ms  p95={percentile(samples, 95):7.1f} ms")


def run_hook(payload: dict | str, env: dict[str, str]) -> float:
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    started = time.perf_counter()
    subprocess.run([PYTHON, "-I", "-S", str(HOOK)], input=raw, text=True, env=env, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000


def proxy_overhead(winni_url: str, token: str, samples: int = 100) -> None:
    """tools/call straight to Winni's /mcp and through `manage.py mcp_proxy` in front of it."""
    import httpx

    from tests.support import free_port

    port = free_port()
    proxy = subprocess.Popen(
        [sys.executable, "manage.py", "mcp_proxy", "--listen", f"127.0.0.1:{port}", "--upstream",
         f"winni={winni_url}/mcp", "--header", f"winni=Authorization: Bearer {token}"],
        cwd=ROOT, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "dewey_get_startup_context", "arguments": {}}}
        headers = {"accept": "application/json, text/event-stream", "authorization": f"Bearer {token}"}
        with httpx.Client(timeout=30) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    client.get(f"http://127.0.0.1:{port}/_proxy/health")
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            for name, url in (("tools/call straight to Winni", f"{winni_url}/mcp"),
                              ("tools/call through mcp_proxy (logged)", f"http://127.0.0.1:{port}/winni/mcp")):
                timings = []
                for _ in tqdm(range(samples), desc=name):
                    started = time.perf_counter()
                    response = client.post(url, json=body, headers=headers)
                    timings.append((time.perf_counter() - started) * 1000)
                    assert response.status_code == 200 and "\"error\"" not in response.text[:200], response.text[:300]
                report(name, timings)
    finally:
        proxy.terminate()
        proxy.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--import-lines", type=int, default=20000)
    parser.add_argument("--data-dir", default="/tmp/winni-bench-capture")
    args = parser.parse_args()

    data_dir = Path(args.data_dir)
    if data_dir.exists():
        from winni_site import embedded

        embedded.stop_all(data_dir)
        shutil.rmtree(data_dir)
    os.environ["WINNI_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "winni_site.settings.dev")
    os.environ["WINNI_LOG_LEVEL"] = "WARNING"
    import django

    django.setup()
    from django.core.management import call_command

    from agents import capture
    from contexts import services as contexts
    from tests.support import LiveServer, free_port
    from winni_site import auth, embedded

    call_command("migrate", verbosity=0)
    _, token = auth.token_create(name="bench")
    contexts.context_set(name="bench", content="# Bench context\n" + "Remember this line.\n" * 200, actor="bench")
    server = LiveServer({**os.environ, "WINNI_DATA_DIR": str(data_dir)})
    work = Path(tempfile.mkdtemp(prefix="winni-bench-hook-"))
    base_env = {"PATH": os.environ["PATH"], "HOME": str(work), "WINNI_HOOK_SPOOL": str(work / "spool.jsonl"),
                "WINNI_HOOK_LOG": str(work / "hook.log")}
    up = {**base_env, "WINNI_URL": server.url, "WINNI_TOKEN": token}
    down = {**base_env, "WINNI_URL": f"http://127.0.0.1:{free_port()}", "WINNI_TOKEN": token}
    session = str(uuid.uuid4())

    def event(name: str, **fields: str) -> dict:
        return {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": str(ROOT), "hook_event_name": name,
                **fields}

    try:
        print(f"capture benchmark, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores")
        report("hook start-up only (malformed input, no I/O)",
               [run_hook("not json", up) for _ in tqdm(range(50), desc="start-up")])
        stored = []
        for i in tqdm(range(args.events), desc="prompt/reply events"):
            payload = event("UserPromptSubmit", prompt=f"prompt {i}") if i % 2 == 0 else event(
                "Stop", last_assistant_message=f"reply {i} " + "text " * 50)
            stored.append(run_hook(payload, up))
        report("UserPromptSubmit/Stop stored (Winni up)", stored)
        report("SessionStart (active context printed)",
               [run_hook(event("SessionStart", source="startup"), up) for _ in tqdm(range(50), desc="session start")])
        report("event spooled (Winni down)",
               [run_hook(event("UserPromptSubmit", prompt=f"down {i}"), down) for i in tqdm(range(50), desc="spool")])
        flush = run_hook(event("UserPromptSubmit", prompt="back"), up)
        print(f"{'first call after Winni is back (flushes 50+1)':<46} {flush:7.1f} ms")

        proxy_overhead(server.url, token)

        lines = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
        transcript = work / "big.jsonl"
        with transcript.open("w") as handle:
            written = 0
            while written < args.import_lines:
                sid = str(uuid.uuid4())
                for line in lines:
                    if "uuid" in line:
                        line = {**line, "uuid": str(uuid.uuid4())}
                    if "sessionId" in line:
                        line = {**line, "sessionId": sid}
                    handle.write(json.dumps(line) + "\n")
                    written += 1
        text = transcript.read_text().splitlines()
        started = time.perf_counter()
        stats = capture.transcript_import_lines(text, transcript_path=str(transcript))
        elapsed = time.perf_counter() - started
        print(f"{'transcript import':<46} {len(text)} lines, {stats.added} messages in {elapsed:.1f} s: "
              f"{len(text) / elapsed:,.0f} lines/s, {stats.added / elapsed:,.0f} messages/s")
        started = time.perf_counter()
        again = capture.transcript_import_lines(text, transcript_path=str(transcript))
        elapsed = time.perf_counter() - started
        print(f"{'transcript re-import (all duplicates)':<46} {again.duplicates} skipped in {elapsed:.1f} s: "
              f"{len(text) / elapsed:,.0f} lines/s")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
        embedded.stop_all(data_dir)


if __name__ == "__main__":
    main()
