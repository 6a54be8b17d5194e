"""The layers, read from the imports of every module (ast), not from a list of files: core ← apps ←
winni_site (docs/architecture.md).

- core imports no app and nothing from winni_site;
- an app (settings.WINNI_APPS; memory.librarian is an app of its own) imports core and itself,
  never winni_site, and no other app except the documented exceptions below;
- winni_site may import anything.
Packages outside the three layers (winni_client, tests, bench) are libraries or tools: not checked."""
import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
CORE, SITE = "core", "winni_site"
# (importing app, imported module prefix): the only imports allowed between apps. "*": any app.
ALLOWED_BETWEEN_APPS = {
    ("*", "memory.embeddings"),  # every app may embed text (the memory app owns the model)
    ("medallions", "conversations.services"),  # a checkpoint reads a stored conversation as evidence
}


def _owner(module: str, packages: list[str]) -> str | None:
    """The layer package a dotted module belongs to: the longest package that is it or contains it."""
    matches = [package for package in packages if module == package or module.startswith(package + ".")]
    return max(matches, key=len) if matches else None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of every import in `source`, relative ones resolved, including
    imports inside functions and under TYPE_CHECKING. `from a import b` yields a.b: b may be a
    module of a, and a name of a belongs to a's layer anyway."""
    found = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found += [(node.lineno, base if alias.name == "*" else f"{base}.{alias.name}") for alias in node.names]
    return found


def violations(module: str, imports: list[tuple[int, str]], apps: list[str]) -> list[str]:
    packages = [CORE, SITE, *apps]
    layer = _owner(module, packages)
    problems = []
    for line, target in imports:
        target_layer = _owner(target, packages)
        if layer is None or target_layer is None or target_layer == layer or layer == SITE or target_layer == CORE:
            continue
        if layer == CORE:
            problems.append(f"{module}:{line} core imports {target}")
        elif target_layer == SITE:
            problems.append(f"{module}:{line} app {layer} imports {target} (winni_site)")
        elif not any(importer in ("*", layer) and (target == prefix or target.startswith(prefix + "."))
                     for importer, prefix in ALLOWED_BETWEEN_APPS):
            problems.append(f"{module}:{line} app {layer} imports {target} (another app)")
    return problems


def _sources() -> list[Path]:
    top = {name.split(".")[0] for name in [CORE, SITE, *settings.WINNI_APPS]}
    return sorted(path for name in top for path in (ROOT / name).rglob("*.py"))


def test_every_module_keeps_to_its_layer():
    apps = list(settings.WINNI_APPS)
    problems, edges = [], set()
    for path in _sources():
        module = _module_name(path)
        imports = imported_modules(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")
        problems += violations(module, imports, apps)
        edges |= {(_owner(module, [CORE, SITE, *apps]), _owner(target, [CORE, SITE, *apps])) for _, target in imports}
    assert problems == []
    # The scan saw the layers it checks (a scan that reads nothing would pass anything).
    assert {("conversations", "core"), ("memory.librarian", "core"), ("winni_site", "memory.librarian"),
            ("medallions", "conversations")} <= edges


def test_the_check_catches_each_kind_of_violation():
    apps = ["conversations", "memory", "memory.librarian", "medallions"]

    def check(module: str, source: str) -> list[str]:
        return violations(module, imported_modules(source, module), apps)

    assert check("conversations.admin", "from winni_site.admin_views import TranscriptAdminMixin")
    assert check("memory.librarian.services", "def f():\n    from winni_site.recall import recall")
    assert check("memory.librarian.services", "from medallions import llm")
    assert check("core.recall", "from memory import retrieval")
    assert check("core.searchable", "import conversations.models")
    assert check("memory.services", "from .librarian import services")  # memory → its nested app
    assert not check("memory.librarian.services", "from memory import embeddings")
    assert not check("medallions.services", "from conversations.services import conversation_get")
    assert not check("winni_site.dashboard", "from memory.librarian.services import librarian_hit_rate_series")
    assert not check("memory.librarian.admin", "from . import services\nfrom core.errors import ApplicationError")
