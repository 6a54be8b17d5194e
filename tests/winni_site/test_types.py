"""The type checker (mypy with django-stubs, configured in pyproject.toml: strict on core/ and every
services module, mypy's default level elsewhere) passes, and every `# type: ignore` that remains
in the source packages says which error it silences and why."""
import os
import re
import subprocess
import sys

import pytest

from tests.support import ROOT

PACKAGES = ["core", "conversations", "contexts", "memory", "medallions", "agents", "winni_site", "winni_client"]
# `# type: ignore[code, ...]  # why`: the codes keep it from hiding a second, different error.
IGNORE = re.compile(r"#\s*type:\s*ignore\b(?P<rest>.*)$")
EXPLAINED = re.compile(r"^\[[a-z-]+(?:,\s*[a-z-]+)*\]\s+#\s*\S.{3,}")


@pytest.mark.slow  # scheduled first (tests/conftest.py): a cold run (no cache) takes under a minute
def test_mypy_passes() -> None:
    # The cache (pyproject.toml: var/mypy-cache, git-ignored) makes a second run a few seconds.
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "winni_site.settings.dev"}
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_type_ignore_names_its_code_and_reason() -> None:
    unexplained = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                found = IGNORE.search(line)
                if found and not EXPLAINED.match(found.group("rest").strip()):
                    unexplained.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not unexplained, "write `# type: ignore[code]  # why`:\n" + "\n".join(unexplained)
