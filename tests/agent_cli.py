"""The real Codex CLI, Gemini CLI and GitHub Copilot CLI (npm), installed once into .agents-cache/
(gitignored) and run headless against loopback fake model servers (tests.fake_openai,
tests.fake_gemini). Like tests.claude_cli, a test skips when npm cannot install the CLI."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT, file_lock

CACHE = ROOT / ".agents-cache"
PACKAGES = {
    "codex": ("@openai/codex", "0.169.0", "codex"),
    "gemini": ("@google/gemini-cli", "0.61.0", "gemini"),
    "copilot": ("@github/copilot", "1.0.102", "copilot"),
}


def agent_binary(agent: str) -> Path:
    """The cached CLI, installed with npm when missing (skips the test when npm cannot)."""
    package, version, name = PACKAGES[agent]
    binary = CACHE / agent / "node_modules" / ".bin" / name
    if binary.exists():
        return binary
    if not shutil.which("npm"):
        pytest.skip(f"npm is not installed: cannot install {package}")
    # One install per CLI at a time (pytest-xdist workers): the others wait, then find the binary.
    with file_lock(CACHE / f"{agent}.lock"):
        if not binary.exists():
            (CACHE / agent).mkdir(parents=True, exist_ok=True)
            result = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(CACHE / agent), f"{package}@{version}"],
                capture_output=True, text=True, timeout=900,
            )
            if result.returncode != 0 or not binary.exists():
                pytest.skip(f"npm could not install {package}@{version}: {result.stderr[-500:]}")
    return binary


def base_env(home: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "NO_COLOR": "1", **extra}


def run_agent(agent: str, args: list[str], *, cwd: Path, env: dict[str, str], timeout: int = 240,
              stdin: str | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([str(agent_binary(agent)), *args], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout, input=stdin if stdin is not None else "")
    assert result.returncode == 0, f"{agent} {args} failed: {result.stdout[-2000:]} {result.stderr[-3000:]}"
    return result
