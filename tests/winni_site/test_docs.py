"""The README and docs/ stay true as features land: every fenced code block parses (or runs), every
environment variable the code reads is in the README's settings table (and nothing stale is),
every registered MCP tool is in the README's tool table (and nothing stale is), and the README stays
a short user's document without lab-notebook wording."""
from __future__ import annotations

import ast
import asyncio
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.support import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "CHANGELOG.md"]
# Fences whose content is prose or program output, not something a machine can check.
PROSE_FENCES = {"text", "markdown"}
# Folders whose files are not the product: their environment knobs are for developers.
NOT_PRODUCT = {".venv", ".git", "tests", "bench", "node_modules", ".claude-cache", "var", "docs"}
ENV_NAME = re.compile(r"(?:WINNI|LIBRARIAN)_[A-Z0-9_]*[A-Z0-9]")
# Files outside Python that read environment variables: the launcher reads Winni's own
# (`$WINNI_X`, beside its shell variables); compose interpolates any `${NAME}` from the host.
SHELL_READS = {
    "winni": re.compile(r"\$\{?((?:WINNI|LIBRARIAN)_[A-Z0-9_]*[A-Z0-9])"),
    "docker-compose.yml": re.compile(r"(?<!\$)\$\{([A-Z_][A-Z0-9_]*)"),
}
ENV_HELPER = re.compile(r"env_(str|bool|int|float|list)$")
SESSION_WORDING = re.compile(
    r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|previous|this|last) session\b", re.I)


def fenced_blocks(path: Path) -> list[tuple[int, str, str]]:
    """(line number, info string, code) of every fenced block; fences may be indented (lists)."""
    blocks: list[tuple[int, str, str]] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = re.match(r"^( {0,3})(```+)\s*(.*)$", lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, info = len(opening.group(1)), opening.group(2), opening.group(3).strip()
        body: list[str] = []
        index += 1
        while index < len(lines) and not re.match(rf"^ {{0,3}}{fence}\s*$", lines[index]):
            body.append(lines[index][indent:] if lines[index][:indent].isspace() else lines[index])
            index += 1
        assert index < len(lines), f"{path.name}: the code block opened at line {len(lines) - len(body)} never closes"
        blocks.append((index - len(body), info, "\n".join(body) + "\n"))
        index += 1
    return blocks


def all_blocks() -> list[tuple[str, str, str]]:
    return [(f"{path.name}:{line}", info, code) for path in DOCUMENTS if path.exists()
            for line, info, code in fenced_blocks(path)]


def check_python(code: str, info: str) -> None:
    compile(code, "<code block>", "exec")  # more than ast.parse: `return` outside a function, say
    if "run" in info.split()[1:]:
        # Self-contained examples run for real, in a fresh interpreter at the project root.
        result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr[-2000:]


def check_json(code: str, info: str) -> None:
    json.loads(code)  # ${VAR} placeholders sit inside strings, so they are valid JSON as written


def check_shell(code: str, info: str) -> None:
    result = subprocess.run(["bash", "-n"], input=code, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


def check_toml(code: str, info: str) -> None:
    tomllib.loads(code)


def check_yaml(code: str, info: str) -> None:
    import yaml

    try:
        yaml.safe_load(code)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


CHECKERS = {"python": check_python, "json": check_json, "sh": check_shell, "bash": check_shell, "toml": check_toml,
            "yaml": check_yaml, "yml": check_yaml}


@pytest.mark.parametrize(("where", "info", "code"), all_blocks(), ids=lambda value: str(value)[:40])
def test_code_block_is_valid(where: str, info: str, code: str) -> None:
    language = info.split()[0] if info else ""
    if language in PROSE_FENCES:
        return
    assert language in CHECKERS, (
        f"{where}: a ```{language or '(no language)'} block: name a checked language "
        f"({', '.join(sorted(CHECKERS))}) or mark it ```text")
    try:
        CHECKERS[language](code, info)
    except (SyntaxError, ValueError, tomllib.TOMLDecodeError, AssertionError) as exc:
        pytest.fail(f"{where}: the ```{info} block is not valid: {exc}")


def test_a_broken_block_fails() -> None:
    """The checks bite: a line break inside a Python string, as the README once had."""
    with pytest.raises(SyntaxError):
        check_python('prompt = "You are working on muse.\n\n" + text\n', "python")
    with pytest.raises(AssertionError):
        check_shell("if true; then echo\n", "sh")
    with pytest.raises(ValueError):
        check_json('{"a": 1,}', "json")
    with pytest.raises(SyntaxError):
        check_python("return 1\n", "python")
    with pytest.raises(ValueError):
        check_yaml("a: [1, 2\n", "yaml")


MANAGE_COMMAND = re.compile(r"(?:\./winni manage|manage\.py)\s+([a-z][a-z0-9_]*)")
# /api/v1/… in a code block, up to a quote, a space, a query string or the end of the line.
API_PATH = re.compile(r"/api/v1/[A-Za-z0-9_\-/{}.<>]*")


def test_management_commands_in_code_blocks_exist() -> None:
    """`./winni manage X` and `manage.py X` in an example name a command that exists."""
    from django.core.management import get_commands

    known = set(get_commands())
    used = [(where, name) for where, _, code in all_blocks() for name in MANAGE_COMMAND.findall(code)]
    assert len(used) >= 3  # the scan itself works
    missing = sorted(f"{where}: {name}" for where, name in used if name not in known)
    assert not missing, f"code blocks name management commands that do not exist: {missing}"
    assert "winni_tokne" not in known


def api_path_resolves(path: str) -> bool:
    """A documented path (placeholders such as {id} or <token> filled in) names a route, with or
    without its trailing slash (the API answers both)."""
    from django.urls import Resolver404, resolve

    path = re.sub(r"\{[^}/]*\}|<[^>/]*>", "x", path.rstrip("."))
    for candidate in {path, path.rstrip("/") + "/", path.rstrip("/")}:
        try:
            resolve(candidate)
            return True
        except Resolver404:
            continue
    return False


def test_api_paths_in_code_blocks_exist() -> None:
    # Requests (shell and Python), not sample answers: a 404's JSON rightly shows a wrong path.
    used = [(where, path) for where, info, code in all_blocks() if info.split()[:1] in (["sh"], ["bash"], ["python"])
            for path in API_PATH.findall(code)]
    assert len(used) >= 3  # the scan itself works
    missing = sorted(f"{where}: {path}" for where, path in used if not api_path_resolves(path))
    assert not missing, f"code blocks use API paths that do not exist: {missing}"
    assert not api_path_resolves("/api/v1/conversation/x/")


# --- Settings ---------------------------------------------------------------------------------

def product_files(suffix: str) -> list[Path]:
    return [path for path in ROOT.rglob(f"*{suffix}")
            if not NOT_PRODUCT & set(path.relative_to(ROOT).parts[:-1])]


def is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ")


def variables_read_in_python(tree: ast.AST) -> set[str]:
    """Names passed to the env_* readers, os.getenv, os.environ.get/setdefault or os.environ[...],
    and every string literal spelt like one of Winni's variables (read through a loop or getattr)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ENV_NAME.fullmatch(node.value):
            names.add(node.value)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            reads_env = ENV_HELPER.match(name) or name == "getenv" or (
                name in ("get", "setdefault") and isinstance(func, ast.Attribute) and is_environ(func.value))
            if reads_env and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
        elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_environ(node.value)
              and isinstance(node.slice, ast.Constant)):
            names.add(node.slice.value)
    return names


def variables_read_by_code() -> set[str]:
    names: set[str] = set()
    for path in product_files(".py"):
        names |= variables_read_in_python(ast.parse(path.read_text(), filename=str(path)))
    for name, pattern in SHELL_READS.items():
        names |= set(pattern.findall((ROOT / name).read_text()))
    return names


def readme_section(title: str) -> str:
    """The README's text from the heading `title` to the next heading of the same or a higher level."""
    text = (ROOT / "README.md").read_text()
    match = re.search(rf"^(#+) {re.escape(title)}\s*$", text, re.M)
    assert match, f"README.md has no heading {title!r}"
    level = len(match.group(1))
    end = re.search(rf"^#{{1,{level}}} ", text[match.end():], re.M)
    return text[match.end(): match.end() + end.start() if end else len(text)]


def first_column_names(section: str) -> list[str]:
    """The first backticked word of each table row's first cell (`NAME` or `tool(args)`)."""
    names = []
    for line in section.splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2:
            first = re.match(r"\s*`([A-Za-z_][A-Za-z0-9_]*)", cells[1])
            if first:
                names.append(first.group(1))
    return names


# Read by the code but not settings a user sets: the system's own variables passed through to
# systemctl, the name `./winni run` gives each child for its log lines, the crash-loop test's hook, and
# the name pytest-xdist gives each of its workers (the test settings give each its own Redis database).
NOT_SETTINGS = {"USER", "XDG_RUNTIME_DIR", "WINNI_PROCESS", "WINNI_TEST_BROKEN_CHILD", "PYTEST_XDIST_WORKER"}


def test_readme_documents_every_setting_the_code_reads() -> None:
    table = set(first_column_names(readme_section("Settings")))
    read = variables_read_by_code() - NOT_SETTINGS
    assert "WINNI_PORT" in read and "DATABASE_URL" in read  # the scan itself works
    missing = read - table
    assert not missing, f"README.md's settings table lacks {sorted(missing)}"
    stale = {name for name in table if name not in read}
    assert not stale, f"README.md's settings table lists {sorted(stale)}, which no code reads"


def test_settings_table_has_one_row_per_variable() -> None:
    names = first_column_names(readme_section("Settings"))
    duplicates = sorted({name for name in names if names.count(name) > 1})
    assert not duplicates, f"listed twice in README.md's settings table: {duplicates}"


# --- MCP tools --------------------------------------------------------------------------------

def test_readme_lists_every_mcp_tool() -> None:
    from winni_site.mcp import build_mcp_server

    registered = {tool.name for tool in asyncio.run(build_mcp_server().list_tools())}
    assert len(registered) > 20
    table = set(first_column_names(readme_section("MCP tools")))
    missing = registered - table
    assert not missing, f"README.md's MCP tools table lacks {sorted(missing)}"
    stale = table - registered
    assert not stale, f"README.md's MCP tools table lists {sorted(stale)}, which the server does not register"


# --- Shape ------------------------------------------------------------------------------------

def test_readme_stays_a_short_users_document() -> None:
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines < 450, f"README.md has {lines} lines: move long-form text to docs/"


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if p.exists()], ids=lambda path: path.name)
def test_no_lab_notebook_wording(path: Path) -> None:
    """Numbers carry a date and a machine; text never says who measured in which sitting."""
    hits = [line for line in path.read_text().splitlines() if SESSION_WORDING.search(line)]
    assert not hits, f"{path.name}: {hits[:3]}"


def heading_anchors(path: Path) -> set[str]:
    """GitHub's anchors: headings lower-cased, punctuation dropped, spaces turned into hyphens."""
    headings = re.findall(r"^#+ (.+)$", path.read_text(), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_docs_links_resolve() -> None:
    """Every relative link from README.md and docs/ points to a file (and heading) that exists."""
    broken = []
    for path in (p for p in DOCUMENTS if p.exists()):
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", path.read_text()):
            if "://" in target:
                continue
            linked = (path.parent / target) if target else path
            if not linked.exists() or (anchor and anchor not in heading_anchors(linked)):
                broken.append(f"{path.name} → {target}#{anchor}")
    assert not broken, broken
