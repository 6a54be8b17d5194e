"""The layers, read from the imports of every module (ast), not from a list of files: core ← apps ←
agents ← winni_site (docs/architecture.md).

- core imports no app, nothing from agents and nothing from winni_site;
- an app (settings.WINNI_APPS; memory.librarian is an app of its own) imports core and itself,
  never agents or winni_site, and no other app except the documented exceptions below;
- agents (capture, hooks, automatic recall) imports core and the apps' public entry points: an
  app's `services` (the names it exports, not its submodules) and the few modules listed in
  PUBLIC_ENTRY_POINTS; never an app's models, another module of an app, a private (underscore)
  name, or winni_site (settings come through django.conf);
- winni_site may import anything.
Packages outside the four layers (winni_client, tests, bench) are libraries or tools: not checked."""
import ast
from pathlib import Path

from django.conf import settings

from tests.support import ROOT

CORE, AGENTS, SITE = "core", "agents", "winni_site"
# (importing app, imported module prefix): the only imports allowed between apps. "*": any app.
ALLOWED_BETWEEN_APPS = {
    ("*", "memory.embeddings"),  # every app may embed text (the memory app owns the model)
    ("medallions", "conversations.services"),  # a checkpoint reads a stored conversation as evidence
}
# Modules of the apps, beside their services, that agents may import.
PUBLIC_ENTRY_POINTS = {
    "memory.embeddings",  # the embedding model every layer uses
}
# (agents module, imported module prefix): today's imports that break the agents' rule. Each is to
# go (issue #46: agents call the apps' services only); none may be added.
AGENTS_EXCEPTIONS = {
    # The installer makes (or checks) the token the hooks use; tokens belong to the site.
    ("agents.management.commands.install_agent_hooks", "winni_site.auth"),
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


def _under(target: str, prefix: str) -> bool:
    return target == prefix or target.startswith(prefix + ".")


def _excepted(module: str, target: str) -> bool:
    return any(module == importer and _under(target, prefix) for importer, prefix in AGENTS_EXCEPTIONS)


def _is_public(target: str, app: str) -> bool:
    """Whether agents may import `target` of `app`: the app's services package or a name it exports
    (not one of its submodules: services/<topic>.py is the app's own business), or a public entry
    point; never a private (underscore) name."""
    if any(part.startswith("_") for part in target.split(".")):
        return False
    if target in PUBLIC_ENTRY_POINTS or any(target.startswith(entry + ".") for entry in PUBLIC_ENTRY_POINTS):
        return True
    services = f"{app}.services"
    if target == services:
        return True
    name = target.removeprefix(services + ".")
    folder = ROOT / Path(*services.split("."))
    return name != target and "." not in name and not (folder / f"{name}.py").exists()


def bound_modules(tree: ast.AST) -> dict[str, str]:
    """The local name each absolute import binds → the dotted name it stands for (`import a.b`
    binds a to a; `import a.b as c`, c to a.b; `from a import b`, b to a.b)."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and not node.level:
            bound.update({alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names})
    return bound


def violations(module: str, imports: list[tuple[int, str]], apps: list[str]) -> list[str]:
    packages = [CORE, AGENTS, SITE, *apps]
    layer = _owner(module, packages)
    problems = []
    for line, target in imports:
        target_layer = _owner(target, packages)
        if layer is None or target_layer is None or target_layer == layer or layer == SITE or target_layer == CORE:
            continue
        if layer == CORE:
            problems.append(f"{module}:{line} core imports {target}")
        elif layer == AGENTS:
            if _excepted(module, target):
                continue
            if target_layer == SITE:
                problems.append(f"{module}:{line} agents imports {target} (winni_site)")
            elif not _is_public(target, target_layer):
                problems.append(f"{module}:{line} agents imports {target} (not the app's services)")
        elif target_layer in (SITE, AGENTS):
            problems.append(f"{module}:{line} app {layer} imports {target} ({target_layer})")
        elif not any(importer in ("*", layer) and (target == prefix or target.startswith(prefix + "."))
                     for importer, prefix in ALLOWED_BETWEEN_APPS):
            problems.append(f"{module}:{line} app {layer} imports {target} (another app)")
    return problems


def agents_private_reads(module: str, source: str, apps: list[str]) -> list[str]:
    """An agents module that reads a private (underscore) name of an app module it imported."""
    if _owner(module, [AGENTS]) is None:
        return []
    tree = ast.parse(source)
    bound = {name: target for name, target in bound_modules(tree).items()
             if _owner(target, apps) and not _excepted(module, target)}
    return [f"{module}:{node.lineno} agents reads {bound[node.value.id]}.{node.attr} (private)"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
            and node.attr.startswith("_") and not node.attr.startswith("__")]


def _sources() -> list[Path]:
    top = {name.split(".")[0] for name in [CORE, AGENTS, SITE, *settings.WINNI_APPS]}
    return sorted(path for name in top for path in (ROOT / name).rglob("*.py"))


def test_every_module_keeps_to_its_layer():
    apps = list(settings.WINNI_APPS)
    problems: list[str] = []
    edges: set[tuple[str | None, str | None]] = set()
    seen: set[tuple[str, str]] = set()
    for path in _sources():
        module = _module_name(path)
        source = path.read_text(encoding="utf-8")
        imports = imported_modules(source, module, path.name == "__init__.py")
        problems += violations(module, imports, apps)
        problems += agents_private_reads(module, source, apps)
        layers = [CORE, AGENTS, SITE, *apps]
        edges |= {(_owner(module, layers), _owner(target, layers)) for _, target in imports}
        seen |= {(module, target) for _, target in imports}
    assert problems == []
    # The scan saw the layers it checks (a scan that reads nothing would pass anything).
    assert {("conversations", "core"), ("memory.librarian", "core"), ("winni_site", "memory.librarian"),
            ("medallions", "conversations"), ("agents", "conversations"), ("winni_site", "agents")} <= edges
    # Each exception is still needed (one that no import uses any more is taken off the list).
    unused = {(importer, prefix) for importer, prefix in AGENTS_EXCEPTIONS
              if not any(module == importer and _under(target, prefix) for module, target in seen)}
    assert unused == set()


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
    assert check("conversations.services", "from agents import capture")  # an app → agents
    assert check("core.recall", "from agents.autorecall import rank")
    # agents: the apps' services and public entry points only, never winni_site.
    assert check("agents.capture", "from memory.models import Memory")
    assert check("agents.capture", "from memory.librarian.services.queries import query_hash")  # a submodule
    assert check("agents.capture", "from conversations.services import _tool_text")  # private
    assert check("agents.capture", "from memory import retrieval")
    assert check("agents.capture", "from winni_site import auth")
    assert check("agents.hook", "def f():\n    from winni_site.settings import base")
    assert not check("agents.capture", "from conversations import services as conversations")
    assert not check("agents.capture", "from conversations.services import message_store, messages_store_bulk")
    assert not check("agents.autorecall", "from memory import embeddings\nfrom core.recall import rank")
    assert not check("winni_site.urls", "from agents.api import CaptureEventApi")
    # A private name read from an imported app module.
    assert agents_private_reads("agents.capture", "from conversations import services\nservices._tool_text(1)", apps)
    assert not agents_private_reads("agents.capture", "from conversations import services\nservices.message_store()",
                                    apps)
