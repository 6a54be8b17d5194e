"""Recovery: how long Winni takes to be healthy again after one of its parts is killed (kill -9),
for each part `./winni run` supervises: web, worker, beat, the embedded PostgreSQL (its
postmaster) and the embedded Redis. One `winni run` in a throw-away data dir; a client keeps
writing through MCP meanwhile, and at the end every acknowledged write must be there.

"Healthy again" is what tests/winni_site/test_ops_supervisor.py checks: the part runs as a new process and
/healthz answers 200; for worker, beat and Redis also a worker heartbeat sent after the kill (beat
queued it through Redis, the worker ran it; WINNI_HEARTBEAT_SECONDS=1). Between kills the part
is left up for 11 s: a part that dies within 10 s of its start counts as failing at start (its
next restart waits longer, and five in a row stop Winni) — that is the supervisor's rule, not
what is measured here.

The embeddings use the model-free `hash` provider unless --provider says otherwise: with the local
model a restarted worker first loads it (≈ 4 s) and works off the embeddings queued while it was
down, and beat's heartbeat task waits behind them — that measures the queue, not the restart.

Prints p50/p95/max per part (issue #27's target: p95 ≤ 10 s over 20 kills per part).
    .venv/bin/python bench/recovery.py [--kills 20] [--parts web,worker,beat,postgres,redis] [--provider hash]"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ops_support import percentile  # noqa: E402

PARTS = ["web", "worker", "beat", "postgres", "redis"]
SETTLE = 11.0
GIVE_UP = 60.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20, help="kills per part")
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--provider", default="hash", help="WINNI_EMBEDDING_PROVIDER of the run (hash, local, …)")
    args = parser.parse_args()
    parts = args.parts.split(",")
    os.environ.setdefault("WINNI_ENV_FILE", os.devnull)  # not the checkout's winni.env
    from tests.support import McpClient, WinniRun, processes_using

    data_dir = Path(tempfile.mkdtemp(prefix="winni-recovery-", dir="/tmp"))
    run = WinniRun(data_dir, WINNI_HEARTBEAT_SECONDS="1", WINNI_LOG_LEVEL="WARNING",
                   WINNI_EMBEDDING_PROVIDER=args.provider,
                   WINNI_EMBEDDING_MODEL="hash-bow" if args.provider == "hash" else "all-MiniLM-L6-v2")
    times: dict[str, list[float]] = {part: [] for part in parts}
    stop = threading.Event()
    acked: list[str] = []
    try:
        run.wait_up()
        client = McpClient(run.url, run.token())
        conversation = client.call("dewey_begin_conversation", {"session_id": "recovery-bench"})["conversation_id"]

        def write() -> None:
            n = 0
            while not stop.is_set():
                try:
                    client.call("dewey_store_message", {"conversation_id": conversation, "role": "user",
                                                        "content": f"write {n}"})
                    acked.append(f"write {n}")
                except Exception:  # noqa: BLE001 - down for a moment: not acknowledged
                    time.sleep(0.2)
                n += 1
                time.sleep(0.1)  # ≈ 10 writes a second: a few busy agents

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        with tqdm(total=args.kills * len(parts), desc="kills", unit="kill") as bar:
            for _ in range(args.kills):
                for part in parts:
                    time.sleep(max(0.0, SETTLE - (time.time() - (run.status()["units"][part]["since"] or 0))))
                    pid, killed_at = run.kill(part)
                    while not run.recovered(part, pid, killed_at):
                        if time.time() - killed_at > GIVE_UP or run.process.poll() is not None:
                            raise SystemExit(f"{part} did not come back within {GIVE_UP:.0f} s:\n{run.console()}")
                        time.sleep(0.05)
                    times[part].append(time.time() - killed_at)
                    bar.set_postfix_str(f"{part} {times[part][-1]:.1f} s")
                    bar.update()
        stop.set()
        writer.join(30)
        stored = client.call("dewey_get_conversation", {"conversation_id": conversation})
        contents = {message["content"] for message in stored["messages"]}
        lost = [content for content in acked if content not in contents]
    finally:
        stop.set()
        run.stop()
        for proc in processes_using(str(data_dir)):
            proc.kill()
        shutil.rmtree(data_dir, ignore_errors=True)

    print(f"\n{'part':<10}{'kills':>6}{'p50 s':>8}{'p95 s':>8}{'max s':>8}")
    for part in parts:
        values = times[part]
        print(f"{part:<10}{len(values):>6}{percentile(values, 50):>8.1f}{percentile(values, 95):>8.1f}{max(values):>8.1f}")
    print(f"{len(acked)} writes acknowledged during the kills, {len(lost)} lost")
    with open("/proc/loadavg") as handle:
        print(f"load average at the end: {handle.read().split()[:3]} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
