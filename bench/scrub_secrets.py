"""Secret scrubbing (core.scrub): detection on planted secrets, false positives on ordinary text,
and the time it adds per captured event.

    .venv/bin/python bench/scrub_secrets.py [--per-format 20] [--events-2k 1000] [--events-20k 300] [--entropy]

1. Detection: bench/secret_corpus.py plants `--per-format` fake secrets of each of its 108 formats
   into realistic tool outputs; a secret counts as redacted when no 12-character stretch of it
   survives scrubbing. Per format, per family and overall, and whether the type is the expected one.
2. False positives: every turn of LoCoMo's chat and every tracked *.py, *.md, *.html, *.txt, *.yml
   file of this repository, read as ordinary text; every redaction is listed (matched text masked).
3. Cost: scrub() on 2 KB and 20 KB events of ordinary tool output, 30 % of them carrying planted
   secrets: p50/p95 per event and throughput, plus adversarial 1 MB inputs.
`--entropy` also measures detect-secrets' entropy plugins (not used by Winni) on the same texts;
`--extra DIR` adds a folder of ordinary text to the false-positive corpora (e.g. Python's stdlib).
"""
from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this folder leads sys.path and this file's name would shadow the standard
# library's `secrets` module for everything imported afterwards.
ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402

from tqdm import tqdm  # noqa: E402

from bench.secret_corpus import FORMATS, held_out_documents, leaked, percentile, planted_documents, timed, tool_output  # noqa: E402
from core.scrub import find_secrets, scrub  # noqa: E402

LOCOMO = Path(os.environ.get("WINNI_LOCOMO", Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "locomo_dev.json.gz"))
SOURCE_GLOBS = ("*.py", "*.md", "*.html", "*.txt", "*.yml")
NAME_BASED = {"dotenv-secret", "named-secret"}


def machine() -> str:
    model, flags = "?", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    shown = " ".join(f for f in ("sse4_2", "avx", "avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile")
                     if f in flags)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{time.strftime('%Y-%m-%d')}, {model} ({os.cpu_count()} cores; flags {shown}), "
            f"Python {platform.python_version()}, load average {load:.1f} at start")


def mask(value: str) -> str:
    value = value.replace("\n", "⏎")
    if len(value) <= 8:
        return value[:2] + "…"
    return f"{value[:4]}…{value[-2:]} ({len(value)} chars)"


def detection(per_format: int, seed: int) -> None:
    documents = planted_documents(seed=seed, per_format=per_format)
    by_format, by_family, typed = defaultdict(Counter), defaultdict(Counter), defaultdict(Counter)
    for document in tqdm(documents, desc="planted documents"):
        scrubbed = scrub(document.text).text
        spans = find_secrets(document.text)
        for planted in document.planted:
            f = planted.format
            ok = not any(leaked(m, scrubbed) for m in planted.secret.material)
            by_format[f.name][ok] += 1
            by_family[f.family][ok] += 1
            at = document.text.find(planted.secret.material[0])
            kinds = {kind for start, end, kind in spans if start <= at < end} if at >= 0 else set()
            expected = NAME_BASED | {f.kind} if f.kind in NAME_BASED or f.kind.endswith(("secret-key", "storage-key")) \
                else {f.kind}
            typed[f.name][bool(kinds & expected)] += 1
    total = sum(c[True] for c in by_format.values()), sum(sum(c.values()) for c in by_format.values())
    print(f"\n## Detection: {total[1]} planted secrets, {len(FORMATS)} formats, {len(documents)} documents")
    print(f"{'format':<28} {'family':<13} {'redacted':>10} {'typed as expected':>18}")
    for f in FORMATS:
        c, t = by_format[f.name], typed[f.name]
        print(f"{f.name:<28} {f.family:<13} {c[True]:>4}/{sum(c.values()):<4} "
              f"{100 * c[True] / max(1, sum(c.values())):5.1f} %  {100 * t[True] / max(1, sum(t.values())):5.1f} %")
    print("per family: " + ", ".join(f"{family} {100 * c[True] / sum(c.values()):.1f} %"
                                     for family, c in sorted(by_family.items())))
    print(f"OVERALL redacted: {total[0]}/{total[1]} = {100 * total[0] / total[1]:.2f} %")

    by_context, missed = defaultdict(Counter), Counter()
    for document in tqdm(held_out_documents(seed=seed + 56), desc="held-out documents"):
        scrubbed = scrub(document.text).text
        for planted in document.planted:
            ok = not any(leaked(m, scrubbed) for m in planted.secret.material)
            by_context[document.context][ok] += 1
            if not ok:
                missed[planted.format.name] += 1
    redacted, total = sum(c[True] for c in by_context.values()), sum(sum(c.values()) for c in by_context.values())
    print(f"\nOther syntaxes (TOML, XML, netrc, curl -u, pgpass, …): {redacted}/{total} = {100 * redacted / total:.1f} % redacted")
    print("  " + ", ".join(f"{name} {100 * c[True] / sum(c.values()):.0f} %" for name, c in by_context.items()))
    print("  missed formats: " + ", ".join(f"{name} {count}" for name, count in missed.most_common()))


def locomo_turns() -> list[tuple[str, str]]:
    turns = []
    for sample in json.load(gzip.open(LOCOMO)):
        for key, session in sample["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [(f"locomo:{sample['sample_id']}:{turn.get('dia_id', '?')}", turn["text"]) for turn in session]
    return turns


def source_files() -> list[tuple[str, str]]:
    names = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *SOURCE_GLOBS],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [(name, (ROOT / name).read_text(errors="replace")) for name in sorted(set(names)) if (ROOT / name).is_file()]


def false_positives(texts: list[tuple[str, str]], label: str, finder=None) -> tuple[int, int, list[str]]:
    finder = finder or find_secrets
    lines, found = 0, []
    for where, text in tqdm(texts, desc=label):
        lines += text.count("\n") + 1
        for start, end, kind in finder(text):
            line = text.count("\n", 0, start) + 1
            found.append(f"{where}:{line}  {kind}  {mask(text[start:end])}")
    return lines, len(found), found


def report_false_positives(texts_by_corpus: dict[str, list[tuple[str, str]]]) -> None:
    print("\n## False positives (every redaction in ordinary text)")
    total_lines = total_found = 0
    for label, texts in texts_by_corpus.items():
        lines, count, found = false_positives(texts, label)
        total_lines, total_found = total_lines + lines, total_found + count
        print(f"{label}: {count} redactions in {lines} lines = {10000 * count / lines:.2f} per 10,000 lines")
        for item in found:
            print("   ", item)
    print(f"OVERALL: {total_found} in {total_lines} lines = {10000 * total_found / total_lines:.2f} per 10,000 lines")


def events(rng: random.Random, size: int, count: int, secrets: list[str]) -> list[str]:
    out = []
    for _ in range(count):
        text = tool_output(rng, size)
        if rng.random() < 0.3:  # some events carry secrets: a planted document spliced in
            planted = rng.choice(secrets)[: size // 2]
            at = rng.randint(0, len(text) - len(planted))
            text = text[:at] + planted + text[at + len(planted):]
        out.append(text)
    return out


def cost(events_2k: int, events_20k: int) -> None:
    rng = random.Random(5)
    planted = [d.text for d in planted_documents(seed=99, per_format=3)]
    print("\n## Cost of scrub() per event (single thread, in-process; wall clock, and this thread's CPU time,\n"
          "## which other processes sharing the cores do not inflate)")
    for size, count, target in ((2_000, events_2k, 1.0), (20_000, events_20k, 5.0)):
        batch = events(rng, size, count, planted)
        for text in batch[:20]:
            scrub(text)  # warm-up
        times, cpu = timed(scrub, batch, f"{size // 1000} KB events")
        chars = sum(len(t) for t in batch)
        print(f"{size // 1000:>2} KB events: n={count}  wall p50 {percentile(times, 0.5):.3f} ms  p95 "
              f"{percentile(times, 0.95):.3f} ms  max {max(times):.2f} ms | CPU p50 {percentile(cpu, 0.5):.3f} ms  "
              f"p95 {percentile(cpu, 0.95):.3f} ms | target p95 <= {target} ms | "
              f"{chars / 1e6 / (sum(times) / 1000):.1f} MB/s, {count / (sum(times) / 1000):.0f} events/s")
    adversarial = {
        "1 MB of one letter": "a" * 1_000_000,
        "1 MB of digits": "7" * 1_000_000,
        "1 MB of hex, one line": "".join(rng.choice("0123456789abcdef") for _ in range(1_000_000)),
        "1 MB of base64, one line": "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
                                            for _ in range(1_000_000)),
        "1 MB of 'key=' repeated": "key=" * 250_000,
        "1 MB of '://a:' repeated": "://a:" * 200_000,
        "1 MB of '-----BEGIN RSA PRIVATE KEY-----' repeated": "-----BEGIN RSA PRIVATE KEY-----\n" * 30_000,
        "1 MB of 'eyJ' + dots": ("eyJhbGciOi." * 100_000)[:1_000_000],
        "1 MB of an opening private tag never closed": "x <" "private> y " * 70_000,
        "1 MB of 'password: ' + long runs": ("password: " + "A1" * 400 + "\n") * 1_200,
    }
    for name, text in adversarial.items():
        started = time.perf_counter()
        result = scrub(text)
        print(f"adversarial {name:<50} {(time.perf_counter() - started) * 1000:8.1f} ms  "
              f"({result.redacted} redactions)")


def entropy(texts_by_corpus: dict[str, list[tuple[str, str]]], per_format: int) -> None:
    """detect-secrets' Base64 (limit 4.5) and Hex (limit 3.0) entropy plugins, on quoted strings the
    way `detect-secrets scan` runs them on files, and eagerly on every word the way its ad-hoc string
    scan does: what they would add on top of scrub() and what they would redact in ordinary text."""
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

    plugins = [Base64HighEntropyString(), HexHighEntropyString()]

    def finder(eager: bool):
        def find(text: str) -> list[tuple[int, int, str]]:
            spans = []
            for line_start, line in _lines(text):
                for plugin in plugins:
                    for secret in plugin.analyze_line(filename="output.txt", line=line, enable_eager_search=eager):
                        at = max(0, line.find(secret.secret_value))
                        spans.append((line_start + at, line_start + at + len(secret.secret_value), plugin.secret_type))
            return spans
        return find

    print("\n## Entropy plugins (measured, not used)")
    documents = planted_documents(per_format=per_format) + held_out_documents()
    corpora = texts_by_corpus
    for eager in (False, True):
        find = finder(eager)
        added = total = 0
        for document in tqdm(documents, desc="planted (entropy)"):
            scrubbed = scrub(document.text).text
            extra = [document.text[s:e] for s, e, _ in find(document.text)]
            for planted in document.planted:
                total += 1
                missed = any(leaked(m, scrubbed) for m in planted.secret.material)
                if missed and any(m in x or x in m for m in planted.secret.material for x in extra):
                    added += 1
        mode = "every word (ad-hoc scan)" if eager else "quoted strings (file scan)"
        print(f"{mode}: of {total} planted secrets (incl. held-out), scrub misses "
              f"{sum(1 for d in documents for p in d.planted if any(leaked(m, scrub(d.text).text) for m in p.secret.material))}"
              f", entropy would add {added}")
        for label, texts in corpora.items():
            lines, count, found = false_positives(texts, f"{label} (entropy)", find)
            print(f"  {label}: {count} findings in {lines} lines = {10000 * count / lines:.1f} per 10,000 lines; "
                  f"e.g. {found[:3]}")


def _lines(text: str):
    start = 0
    for line in text.splitlines(keepends=True):
        yield start, line.rstrip("\r\n")
        start += len(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-format", type=int, default=20)
    parser.add_argument("--seed", type=int, default=21, help="of the planted documents (held-out: seed + 56)")
    parser.add_argument("--events-2k", type=int, default=1000)
    parser.add_argument("--events-20k", type=int, default=300)
    parser.add_argument("--entropy", action="store_true")
    parser.add_argument("--extra", type=Path, action="append", default=[],
                        help="another folder of ordinary text for false positives (its *.py, *.md, *.txt outside test folders)")
    args = parser.parse_args()
    print(f"# Secret scrubbing benchmark: {machine()}")
    detection(args.per_format, args.seed)
    rng = random.Random(3)
    corpora = {"LoCoMo chat turns": locomo_turns(), "Winni source tree": source_files(),
               "ordinary tool output (generated: git log, pytest, JSON listings with hashes and ids, source slices)":
                   [(f"event{i}", tool_output(rng, 20_000)) for i in range(100)]}
    for folder in args.extra:
        corpora[str(folder)] = [
            (str(path.relative_to(folder)), path.read_text(errors="replace")) for path in sorted(folder.rglob("*"))
            if path.suffix in (".py", ".md", ".txt") and path.is_file()
            and not {"test", "tests", "site-packages"} & set(path.relative_to(folder).parts)]
    report_false_positives(corpora)
    cost(args.events_2k, args.events_20k)
    if args.entropy:
        entropy(corpora, args.per_format)


if __name__ == "__main__":
    main()
