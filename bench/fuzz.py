"""Long schemathesis run over every REST operation of a throw-away Winni (with a token): zero
5xx and every response matching the schema. The test suite runs the same with few examples.
    .venv/bin/python bench/fuzz.py [--examples 300]"""
from __future__ import annotations

import argparse
import time

from ops_support import winni_server
from tqdm import tqdm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=300, help="examples per operation")
    args = parser.parse_args()
    from winni_site.fuzzing import fuzz_api

    with winni_server("fuzz") as (server, token, _):
        started = time.monotonic()
        bar = tqdm(desc="operations", unit=" op")
        report = fuzz_api(server.url, token, examples=args.examples, seed=None, on_operation=lambda label: bar.update(1))
        bar.close()
        elapsed = time.monotonic() - started
    print(f"\n{len(report.operations)} operations, {report.calls} calls in {elapsed:.0f} s")
    print("statuses:", dict(sorted(report.statuses.items())))
    print("5xx:", sum(n for status, n in report.statuses.items() if status >= 500))
    print("failures:", len(report.failures))
    for label, failure in report.failures.items():
        print(f"--- {label}\n{failure}")


if __name__ == "__main__":
    main()
