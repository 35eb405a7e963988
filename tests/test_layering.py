"""The packages depend on each other in one direction only, and no modules import each other in a circle.

docs/architecture.md 1 orders the packages: ``ouroboros_mux`` -> ``protocol_engine`` (the typed-protocol
engine the handshake and every mini-protocol run on) -> ``handshake`` -> ``miniprotocols`` ->
``dmq`` (the node, with its cardano-node link ``dmq.cardano_node``) -> ``topics`` (the topic adapters)
-> ``clients`` (the client libraries) -> ``apps`` (applications built on topics) -> ``lab`` (the lab
harnesses). Each may import only those before it: the lab may import the applications and the client
libraries, which may not import the lab; nothing of the node imports a client library, an application
or the lab. ``spark`` stands beside the order: it may import the node's packages (``dmq`` and those
before it) and nothing imports it. The composition root (``dmq.cli``: the command line and the wiring
of a running node) may import everything, and nothing imports it. Every import counts: module-level,
inside functions, and under ``TYPE_CHECKING``, since each of them is a dependency a reader has to
follow and a cycle waiting to happen.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Package -> its place in the order; a package may import those of a lower rank.
RANK = {"ouroboros_mux": 0, "protocol_engine": 1, "handshake": 2, "miniprotocols": 3, "dmq": 4, "topics": 5,
        "clients": 6, "apps": 7, "lab": 8, "spark": 5}
#: Packages beside the order: each imports by its rank, and no other package imports it.
IMPORTED_BY_NONE = {"spark"}
COMPOSITION_ROOT = "dmq.cli"


@dataclass(frozen=True)
class Import:
    module: str      # the importing module
    path: Path
    line: int
    target: str      # the imported module (the longest prefix that is a module of the project)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for package in RANK for path in sorted((ROOT / package).rglob("*.py"))}


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> list[str]:
    """The project modules one import statement names (``from a import b`` names ``a.b`` if it is a module)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            package = module.split(".")
            keep = len(package) - node.level + (1 if path.name == "__init__.py" else 0)
            prefix = ".".join(package[:keep] + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [prefix] + [f"{prefix}.{alias.name}" for alias in node.names
                            if f"{prefix}.{alias.name}" in modules]
    out = []
    for name in names:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.append(name)
    return out


def _imports() -> list[Import]:
    modules = _modules()
    found = []
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.extend(Import(module, path, node.lineno, target)
                             for target in _targets(module, path, node, modules))
    return found


def _in_root(module: str) -> bool:
    return module == COMPOSITION_ROOT or module.startswith(COMPOSITION_ROOT + ".")


def _where(imp: Import) -> str:
    return f"{imp.path.relative_to(ROOT)}:{imp.line}: {imp.module} imports {imp.target}"


def upward_imports(imports: list[Import]) -> list[str]:
    wrong = []
    for imp in imports:
        if _in_root(imp.module):
            continue
        if _in_root(imp.target):
            wrong.append(_where(imp) + " (the composition root, which nothing imports)")
            continue
        source, target = imp.module.split(".")[0], imp.target.split(".")[0]
        if source != target and (RANK[target] >= RANK[source] or target in IMPORTED_BY_NONE):
            wrong.append(_where(imp) + f" ({source} may not depend on {target})")
    return wrong


def cycles(imports: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.module, set()).add(imp.target)
        graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_package_imports_a_later_one():
    wrong = upward_imports(_imports())
    assert not wrong, f"{len(wrong)} upward import(s):\n" + "\n".join(wrong)


def test_no_modules_import_each_other_in_a_circle():
    imports = _imports()
    found = cycles(imports)
    detail = []
    for component in found:
        members = set(component)
        detail.append(" <-> ".join(component))
        detail.extend("    " + _where(imp) for imp in imports if imp.module in members and imp.target in members)
    assert not found, f"{len(found)} import cycle(s):\n" + "\n".join(detail)


def test_the_checks_see_what_they_should(tmp_path):
    """The walk finds function-level and TYPE_CHECKING imports, and the checks name them."""
    def made(number: int, module: str, target: str) -> Import:
        return Import(module, ROOT.joinpath(*module.split(".")).with_suffix(".py"), number, target)

    imports = [made(1, "dmq.x", "topics.y"), made(2, "topics.y", "dmq.x"),
               made(3, "clients.c", "lab.l"), made(4, "lab.l", "clients.c"), made(5, "lab.l", "apps.a"),
               made(6, "apps.a", "clients.c"), made(7, "apps.a", "lab.l"), made(8, "dmq.cardano_node.link", "clients.c"),
               made(9, "topics.y", "apps.a"), made(10, "spark.s", "dmq.x"), made(11, "spark.s", "clients.c"),
               made(12, "lab.l", "spark.s"), made(13, "apps.a", "spark.s"), made(14, "dmq.cli.node", "lab.l"),
               made(15, "dmq.cli.node", "spark.s"), made(16, "lab.l", "dmq.cli.node")]
    assert [line.split(":")[1] for line in upward_imports(imports)] == ["1", "3", "7", "8", "9", "11", "12", "13", "16"]
    assert cycles(imports[:2]) == [["dmq.x", "topics.y"]]
    found = _imports()
    nested = [imp for imp in found if imp.module == "dmq.cli.tool"]
    assert nested, "the composition root's imports (mostly inside functions) were not found"
    assert {imp.module.split(".")[0] for imp in found} >= {"dmq", "topics", "clients", "lab", "spark"}, \
        "the walk missed a package of the order"
