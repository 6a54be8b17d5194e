"""No Docker engine runs here: check that the compose file parses, has every service, and passes
every environment variable the settings read. (README's settings table: tests/winni_site/test_docs.py.)"""
import ast
import importlib.metadata
import re

import yaml
from django.conf import settings

from tests.support import ROOT

SETTINGS_READ = re.compile(r'env_(?:str|bool|int|float|list)\(\s*"([A-Z0-9_]+)"')


def settings_variables() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "winni_site" / "settings").glob("*.py"):
        names |= set(SETTINGS_READ.findall(path.read_text()))
    return names


def test_compose_names_every_service_and_variable():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert {"db", "redis", "web", "worker", "beat"} <= set(compose["services"])
    assert compose["services"]["db"]["image"].startswith("pgvector/pgvector")
    for name in ("web", "worker", "beat", "db", "redis"):
        assert "healthcheck" in compose["services"][name], name
    env = compose["services"]["web"]["environment"]
    missing = settings_variables() - set(env)
    assert not missing, f"docker-compose.yml does not set {sorted(missing)}"


def test_requirements_are_pinned_and_torch_comes_first():
    lines = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines[0] == "torch==2.13.0"
    assert all("==" in line for line in lines), [line for line in lines if "==" not in line]


def _pins(name: str) -> dict[str, str]:
    """Package (normalised name) → line, for one requirements file's pinned lines."""
    lines = [ln for ln in (ROOT / name).read_text().splitlines() if ln and not ln.startswith(("#", "-r "))]
    return {re.sub(r"[-_.]+", "-", line.split("==")[0]).lower(): line for line in lines}


def test_development_requirements_are_pinned_and_kept_apart_from_the_runtime():
    lines = [ln for ln in (ROOT / "requirements-dev.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines[0] == "-r requirements.txt"
    assert all("==" in line for line in lines[1:]), [line for line in lines[1:] if "==" not in line]
    runtime, dev = _pins("requirements.txt"), _pins("requirements-dev.txt")
    assert not set(runtime) & set(dev), f"in both files: {sorted(set(runtime) & set(dev))}"
    tools = {"pytest", "pytest-django", "pytest-xdist", "pytest-cov", "coverage", "hypothesis", "schemathesis",
             "playwright", "ruff"}
    assert tools <= set(dev), f"requirements-dev.txt lacks {sorted(tools - set(dev))}"


def test_the_docker_image_installs_the_runtime_requirements_only():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -r requirements.txt" in dockerfile
    assert "requirements-dev" not in dockerfile


def _import_time_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Modules a file imports when it is imported: anything but the bodies of functions."""
    found = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
        found += _import_time_imports(node)
    return found


def test_runtime_code_imports_no_development_tool_when_imported():
    """`./winni run` and the Docker image install requirements.txt only: a module of the product
    may use a development tool (winni_site/fuzzing.py: schemathesis) only inside a function."""
    dev = set(_pins("requirements-dev.txt"))
    owners = importlib.metadata.packages_distributions()
    dev_modules = {module for module, dists in owners.items()
                   if all(re.sub(r"[-_.]+", "-", dist).lower() in dev for dist in dists)}
    assert {"pytest", "schemathesis", "hypothesis", "playwright"} <= dev_modules
    product = ["core", "agents", "winni_site", "winni_client", *{app.split(".")[0] for app in settings.WINNI_APPS}]
    problems = []
    for path in sorted(p for name in product for p in (ROOT / name).rglob("*.py")):
        for line, module in _import_time_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if module.split(".")[0] in dev_modules:
                problems.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not problems, problems
