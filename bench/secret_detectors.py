"""How well candidate secret-detector libraries do on their own, out of the box, on the planted
corpus (bench/secret_corpus.py), LoCoMo's chat and Winni's source tree: the numbers behind the
choice in docs/privacy.md. Each library runs in its own throw-away venv (they are not Winni
requirements, except the chosen one):

    python3 -m venv /tmp/ds && /tmp/ds/bin/pip install detect-secrets==1.5.0 tqdm
    /tmp/ds/bin/python bench/secret_detectors.py detect-secrets
    (likewise credsweeper, whispers)

A library only *finds* secrets; to compare it with scrubbing, every value it reports is
replaced wherever it occurs, and a planted secret counts as redacted when no 12-character
stretch of it survives (bench.secret_corpus.leaked)."""
from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

from bench.secret_corpus import held_out_documents, leaked, percentile, planted_documents, timed, tool_output  # noqa: E402

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "bench-data" / "locomo_dev.json.gz"
SOURCE_GLOBS = ("*.py", "*.md", "*.html", "*.txt", "*.yml")


def detect_secrets_finder() -> Callable[[str], list[str]]:
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings

    settings = default_settings()
    settings.__enter__()  # all plugins, default filters, for the life of the process

    def find(text: str) -> list[str]:
        return [s.secret_value for line in text.splitlines() for s in scan_line(line) if s.secret_value]
    find.settings = settings  # leaving the settings' context (when collected) would restore the defaults
    return find


def detect_secrets_file_finder() -> Callable[[str], list[str]]:
    """The way `detect-secrets scan` reads a file: regex plugins, keyword and entropy plugins on
    quoted strings only, and the default heuristic filters."""
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import default_settings

    settings = default_settings()
    settings.__enter__()
    path = Path(tempfile.mkdtemp(prefix="detect-secrets-")) / "output.txt"

    def find(text: str) -> list[str]:
        path.write_text(text)
        found = [s for s in scan_file(str(path)) if s.secret_value]
        TYPES.update(s.type for s in found)
        return [s.secret_value for s in found]
    find.settings = settings
    return find


TYPES: Counter = Counter()


def detect_secrets_regex_finder() -> Callable[[str], list[str]]:
    """Only the regex plugins' patterns (no keyword, no entropy plugin), each over the whole text,
    the whole match taken (their groups are sometimes just the prefix, e.g. GitHub's `(ghp|...)`)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    patterns = [(cls.secret_type, regex) for cls in get_mapping_from_secret_type_to_class().values()
                if issubclass(cls, RegexBasedDetector) and cls.__name__ != "IPPublicDetector"
                for regex in cls.denylist]

    def find(text: str) -> list[str]:
        found = [(kind, m.group(0)) for kind, regex in patterns for m in regex.finditer(text)]
        TYPES.update(kind for kind, _ in found)
        return [value for _, value in found]
    return find


def credsweeper_finder() -> Callable[[str], list[str]]:
    from credsweeper.app import CredSweeper
    from credsweeper.file_handler.string_content_provider import StringContentProvider

    sweeper = CredSweeper()

    def find(text: str) -> list[str]:
        sweeper.credential_manager.set_credentials([])
        sweeper.credential_manager.extend_credentials(sweeper.file_scan(StringContentProvider(text.splitlines())))
        sweeper.post_processing(None)  # the ML validation of candidates
        return [data.value for candidate in sweeper.credential_manager.get_credentials()
                for data in candidate.line_data_list if data.value]
    return find


def whispers_finder() -> Callable[[str], list[str]]:
    import whispers

    folder = Path(tempfile.mkdtemp(prefix="whispers-"))

    def find(text: str) -> list[str]:
        path = folder / "output.txt"
        path.write_text(text)
        return [pair.value for pair in whispers.secrets(str(path)) if pair.value]
    return find


def winni_finder() -> Callable[[str], list[str]]:
    """Winni's core.scrub, for the same table (run with Winni's .venv)."""
    from core.scrub import find_secrets

    def find(text: str) -> list[str]:
        found = find_secrets(text)
        TYPES.update(kind for _, _, kind in found)
        return [text[start:end] for start, end, _ in found]
    return find


FINDERS = {"winni": winni_finder, "detect-secrets": detect_secrets_finder,
           "detect-secrets-file": detect_secrets_file_finder,
           "detect-secrets-regex": detect_secrets_regex_finder, "credsweeper": credsweeper_finder, "whispers": whispers_finder}


def redact(text: str, values: list[str]) -> str:
    for value in sorted(set(values), key=len, reverse=True):
        text = text.replace(value, "[REDACTED]")
    return text


def locomo_turns() -> list[str]:
    turns = []
    for sample in json.load(gzip.open(LOCOMO)):
        for key, session in sample["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [turn["text"] for turn in session]
    return turns


def source_files() -> list[tuple[str, str]]:
    names = subprocess.run(["git", "ls-files", *SOURCE_GLOBS], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    return [(name, (ROOT / name).read_text(errors="replace")) for name in names if (ROOT / name).is_file()]


def main() -> None:
    from tqdm import tqdm

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("library", choices=sorted(FINDERS))
    parser.add_argument("--timing-events", type=int, default=100)
    args = parser.parse_args()
    find = FINDERS[args.library]()

    documents = planted_documents()
    per_family, per_format = defaultdict(Counter), defaultdict(Counter)
    for document in tqdm(documents, desc="planted corpus"):
        scrubbed = redact(document.text, find(document.text))
        for planted in document.planted:
            ok = not any(leaked(m, scrubbed) for m in planted.secret.material)
            per_family[planted.format.family][ok] += 1
            per_format[planted.format.name][ok] += 1
    total = sum(c[True] for c in per_family.values()), sum(sum(c.values()) for c in per_family.values())
    print(f"\n{args.library}: planted secrets redacted {total[0]}/{total[1]} = {100 * total[0] / total[1]:.1f} %")
    for family, c in sorted(per_family.items()):
        print(f"  {family:<14} {c[True]:4d}/{sum(c.values()):<4d} {100 * c[True] / sum(c.values()):5.1f} %")
    print("  formats missed entirely or partly:",
          ", ".join(f"{n} {c[True]}/{sum(c.values())}" for n, c in sorted(per_format.items()) if c[False]))
    held = Counter()
    for document in tqdm(held_out_documents(), desc="held-out corpus"):
        scrubbed = redact(document.text, find(document.text))
        for planted in document.planted:
            held[not any(leaked(m, scrubbed) for m in planted.secret.material)] += 1
    print(f"held-out syntaxes: {held[True]}/{sum(held.values())} = {100 * held[True] / sum(held.values()):.1f} %")

    TYPES.clear()
    turns = locomo_turns()
    hits = sum(len(find(t)) for t in tqdm(turns, desc="LoCoMo turns"))
    lines = sum(t.count("\n") + 1 for t in turns)
    print(f"LoCoMo: {hits} findings in {lines} lines = {10000 * hits / lines:.1f} per 10k lines {dict(TYPES)}")
    TYPES.clear()
    files = source_files()
    found, lines = Counter(), 0
    for name, text in tqdm(files, desc="source files"):
        lines += text.count("\n") + 1
        found[name] += len(find(text))
    print(f"source tree: {sum(found.values())} findings in {lines} lines = "
          f"{10000 * sum(found.values()) / lines:.1f} per 10k lines; most in {found.most_common(5)} {dict(TYPES)}")

    rng = random.Random(7)
    for size in (2_000, 20_000):
        events = [tool_output(rng, size) for _ in range(args.timing_events)]
        times, cpu = timed(find, events, f"timing {size // 1000} KB")
        print(f"{size // 1000:>2} KB events: wall p50 {percentile(times, 0.5):.2f} ms  p95 {percentile(times, 0.95):.2f} ms"
              f"  mean {statistics.mean(times):.2f} ms | CPU p50 {percentile(cpu, 0.5):.2f} ms  "
              f"p95 {percentile(cpu, 0.95):.2f} ms")


if __name__ == "__main__":
    main()
