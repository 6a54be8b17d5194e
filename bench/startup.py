"""Ready means ready (issue #43): how long a warm `./winni run` takes until it says it is up (the web
process listens once its recall path is warm; "up" waits for the worker's first heartbeat), and
what the first prompt after each start waits for, through the real hook program.

One data dir (--data-dir, default /tmp/winni-bench-startup) holds a store of realistic coding
sessions (bench/realistic.py, --messages, written in their projects with their vectors, once).
Then, --starts times: `manage.py winni_run` is started and timed until it prints "Winni is up"
(and the worker named as still starting, if it is); the hook program (a new
`python3 -I -S agents/hook.py`, WINNI_HOOK_TIMEOUT 2 s) sends a UserPromptSubmit asking
one of the corpus' questions in its project's folder, timed; its block is compared with the block
the same question got through POST /api/v1/recall/context on the warm server just before that
restart (same store, nothing captured in between). Winni is stopped with SIGINT and the next
start begins.

    .venv/bin/python bench/startup.py [--starts 20] [--messages 3000]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ops_support import percentile  # noqa: E402


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def prepare(messages: int) -> tuple[str, list[tuple[str, str, str]]]:
    """The store (loaded once per data dir), a token, and (question, cwd, project) the store answers."""
    import _django
    import realistic

    _django.setup("startup")
    from conversations.models import Message
    from winni_site import auth

    corpus = realistic.RealisticCorpus(conversations=max(10, messages // 50), messages=messages, seed=0)
    if not Message.objects.exists():
        realistic.load_realistic(conversations=max(10, messages // 50), messages=messages, seed=0, with_projects=True)
        _django.embed_pending("message")
    _, token = auth.token_create(name=f"bench-startup-{uuid.uuid4().hex[:6]}")
    questions = [(text, project.root, project.name)
                 for kind, text, project in realistic.project_queries(corpus, 200, seed=11) if kind == "question"]
    from django.db import connections

    connections.close_all()
    return token, questions


def start(env: dict[str, str]) -> tuple[subprocess.Popen[str], float, str]:
    """A `winni run`, once it printed that it is up: (process, seconds, what is still starting)."""
    began = time.monotonic()
    process = subprocess.Popen([sys.executable, "manage.py", "winni_run"], cwd=ROOT, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    still = ""
    assert process.stdout is not None
    for line in process.stdout:
        if "Winni is up in" in line:
            seconds = time.monotonic() - began
            following = process.stdout.readline()
            if "still starting" in following:
                still = following.strip()
            return process, seconds, still
    raise RuntimeError(f"winni run exited ({process.wait()}) before it was up")


def stop(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def recall_context(url: str, token: str, prompt: str, project: str) -> str:
    request = urllib.request.Request(
        f"{url}/api/v1/recall/context", data=json.dumps({"prompt": prompt, "project": project}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())["text"]


def hook_prompt(url: str, token: str, prompt: str, cwd: str, home: Path) -> tuple[float, str]:
    """(milliseconds, the block) of one UserPromptSubmit through the hook program, a new session."""
    from agents.management.commands.install_claude_hooks import HOOK_SCRIPT

    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "WINNI_URL": url, "WINNI_TOKEN": token,
           "WINNI_HOOK_SPOOL": str(home / "spool.jsonl"), "WINNI_HOOK_LOG": str(home / "hook.log"),
           "WINNI_HOOK_TIMEOUT": "2"}
    payload = {"session_id": f"startup-{uuid.uuid4().hex}", "cwd": cwd, "hook_event_name": "UserPromptSubmit",
               "prompt": prompt, "transcript_path": ""}
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-I", "-S", str(HOOK_SCRIPT)], input=json.dumps(payload), text=True,
                          capture_output=True, env=env, timeout=60)
    took = (time.perf_counter() - began) * 1000
    block = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout.strip() else ""
    return took, block


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--messages", type=int, default=3000)
    parser.add_argument("--data-dir", default="/tmp/winni-bench-startup")
    args = parser.parse_args()
    os.environ["WINNI_DATA_DIR"] = args.data_dir
    token, questions = prepare(args.messages)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "WINNI_DATA_DIR": args.data_dir, "WINNI_PORT": str(port), "WINNI_LOG_LEVEL": "WARNING",
           "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev"}
    home = Path(tempfile.mkdtemp(prefix="winni-bench-startup-"))
    ups, firsts, equal, blocks, still = [], [], 0, 0, 0
    process, _, _ = start(env)
    try:
        for index in range(args.starts):
            prompt, cwd, project = questions[index % len(questions)]
            reference = recall_context(url, token, prompt, project)  # warm, before the restart
            stop(process)
            process, seconds, starting = start(env)
            ups.append(seconds)
            still += bool(starting)
            took, block = hook_prompt(url, token, prompt, cwd, home)
            firsts.append(took)
            equal += block == reference
            blocks += bool(reference)
            print(f"start {index + 1}: up in {seconds:.1f} s{' (' + starting + ')' if starting else ''}; "
                  f"first prompt {took:.0f} ms, block {'equal' if block == reference else 'DIFFERENT'} "
                  f"({len(block)} / {len(reference)} characters)", flush=True)
    finally:
        stop(process)
    print(f"\n{args.starts} warm starts, {args.messages} realistic messages stored")
    print(f"  start to up (model loaded, worker heartbeat seen): p50 {percentile(ups, 50):.1f} s, "
          f"p95 {percentile(ups, 95):.1f} s, max {max(ups):.1f} s; worker still starting at 'up': {still}")
    print(f"  first prompt's hook after the start: p50 {percentile(firsts, 50):.0f} ms, "
          f"p95 {percentile(firsts, 95):.0f} ms, max {max(firsts):.0f} ms (hook timeout 2,000 ms)")
    print(f"  its block equal to the warm one's: {equal} of {args.starts} ({blocks} of the questions had a block)")


if __name__ == "__main__":
    main()
