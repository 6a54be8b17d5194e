"""The real Claude Code CLI (npm @anthropic-ai/claude-code), installed once into .claude-cache/
(gitignored) and run headless against tests.fake_anthropic."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT, file_lock

CLAUDE_CODE_VERSION = "2.1.197"
CACHE = ROOT / ".claude-cache"
BIN = CACHE / "node_modules" / ".bin" / "claude"


def claude_binary() -> Path:
    """The cached CLI, installing it with npm when missing (skips the test when npm cannot)."""
    if BIN.exists():
        return BIN
    if not shutil.which("npm"):
        pytest.skip("npm is not installed: cannot install Claude Code")
    # One install at a time (pytest-xdist workers): the others wait, then find the binary.
    with file_lock(CACHE / ".install.lock"):
        if not BIN.exists():
            CACHE.mkdir(exist_ok=True)
            result = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(CACHE),
                 f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}"],
                capture_output=True, text=True, timeout=600,
            )
            if result.returncode != 0 or not BIN.exists():
                pytest.skip(f"npm could not install Claude Code: {result.stderr[-500:]}")
    return BIN


def claude_env(home: Path, api_url: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "LANG": "C.UTF-8",
    }


def run_claude(args: list[str], *, cwd: Path, env: dict[str, str]) -> str:
    result = subprocess.run([str(claude_binary()), *args], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, f"claude {args} failed: {result.stdout[-1000:]} {result.stderr[-2000:]}"
    return result.stdout
