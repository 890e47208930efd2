"""No import cycle in hwadvisor, between files or between packages.

The graph is read from the source (the AST), so an import inside a function or under
``TYPE_CHECKING`` counts as much as one at the top of a module: a cycle hidden behind a
function-level import is still a cycle in the design. Packages are the subpackages
(``probe``, ``bench``, ``catalog``, ``engine``, ``estimate``, ``export``, ``models``,
``render``, ``cli``, ``pipeline``, ...) and the top-level modules (``errors``, ``io``, ...).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "hwadvisor"
TOP = "hwadvisor"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: dotted name -> (file, is a package's __init__)."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


MODULES = _modules()


def _known(name: str) -> str | None:
    """``name`` if it is one of our modules, else the nearest enclosing one."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, path: Path, is_package: bool) -> set[str]:
    """The modules of ours that ``module`` imports, anywhere in its body."""
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {_known(a.name) or "" for a in node.names if a.name.split(".")[0] == TOP}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            if source.split(".")[0] != TOP:
                continue
            for alias in node.names:
                # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod.
                full = f"{source}.{alias.name}"
                out.add(full if full in MODULES else _known(source) or "")
    out.discard("")
    out.discard(module)
    return out


def file_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports."""
    return {name: _imported(name, path, pkg) for name, (path, pkg) in MODULES.items()}


def unit(module: str) -> str:
    """The package a module belongs to: ``hwadvisor.X`` for anything under X."""
    parts = module.split(".")
    return ".".join(parts[:2])


def package_graph(files: dict[str, set[str]]) -> dict[str, set[str]]:
    """Package -> the other packages its modules import."""
    out: dict[str, set[str]] = {}
    for source, targets in files.items():
        edges = out.setdefault(unit(source), set())
        edges |= {unit(t) for t in targets if unit(t) != unit(source)}
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _show(found: Iterable[list[str]], graph: dict[str, set[str]]) -> str:
    lines = []
    for component in found:
        members = set(component)
        edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a] & members)]
        lines.append("cycle: " + "; ".join(edges))
    return "\n".join(lines)


def test_no_cycle_between_files() -> None:
    graph = file_graph()
    found = cycles(graph)
    assert not found, _show(found, graph)


def test_no_cycle_between_packages() -> None:
    graph = package_graph(file_graph())
    found = cycles(graph)
    assert not found, _show(found, graph)


def test_the_graph_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    """The reader is what the two tests above rely on: check it on a made-up package."""
    code = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from hwadvisor.models.facts import Facts\n"
        "def f():\n    from hwadvisor.pipeline import advise\n    import hwadvisor.io\n"
        "from . import seams\nfrom .cpu import probe_cpu\n"
    )
    path = tmp_path / "x.py"
    path.write_text(code)
    seen = _imported("hwadvisor.probe.x", path, False)
    assert {
        "hwadvisor.models.facts",
        "hwadvisor.pipeline",
        "hwadvisor.io",
        "hwadvisor.probe.seams",
        "hwadvisor.probe.cpu",
    } <= seen


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_cycles_are_found(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(graph) == expected


def test_packages_are_the_subpackages_and_top_level_modules() -> None:
    units = set(package_graph(file_graph()))
    assert {
        f"{TOP}.{name}"
        for name in (
            "probe",
            "bench",
            "catalog",
            "engine",
            "estimate",
            "export",
            "models",
            "render",
            "cli",
            "errors",
        )
    } <= units
