"""No import cycle in hwadvisor, between files or between packages, and the layers kept.

The graph is read from the source (the AST), so an import inside a function or under
``TYPE_CHECKING`` counts as much as one at the top of a module: a cycle hidden behind a
function-level import is still a cycle in the design. Packages are the subpackages
(``probe``, ``bench``, ``catalog``, ``engine``, ``estimate``, ``export``, ``models``,
``render``, ``cli``, ``pipeline``, ...) and the top-level modules (``errors``, ``io``, ...).

The packages stand in layers (:data:`LAYERS`), each importing only those below it; the
views (``render``) read documents, never the pipeline or the exporters; the estimator
and the rule engine never import the benchmark; and the estimator's four wings import
one way (:data:`WINGS`).
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


# -- the layers -------------------------------------------------------------------------------

#: The packages from the bottom up: each imports only packages before it in the list.
LAYERS = [
    TOP,
    *(
        f"{TOP}.{name}"
        for name in (
            "errors",
            "units",
            "parse",
            "optional",
            "processes",
            "io",
            "models",
            "probe",
            "catalog",
            "llm",
            "cost",
            "bench",
            "estimate",
            "engine",
            "render",
            "pipeline",
            "export",
            "cli",
            "__main__",
        )
    ),
]

#: The estimator's wings from the bottom up; the top-level modules (``estimate.report``,
#: ``estimate/__init__``) sit above all four.
WINGS = ["workload", "memory", "timing", "llm"]


def _upward(graph: dict[str, set[str]], order: list[str]) -> list[str]:
    """The edges of ``graph`` from a node to one not below it in ``order``."""
    rank = {name: n for n, name in enumerate(order)}
    return [
        f"{a} -> {b}"
        for a in sorted(graph)
        for b in sorted(graph[a])
        if a in rank and b in rank and rank[b] >= rank[a]
    ]


def test_every_package_has_a_layer() -> None:
    assert set(package_graph(file_graph())) <= set(LAYERS)


def test_each_package_imports_only_the_layers_below_it() -> None:
    upward = _upward(package_graph(file_graph()), LAYERS)
    assert not upward, "\n".join(upward)


def _imports_of(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports, for the modules of ``package``."""
    return {m: t for m, t in file_graph().items() if m == package or m.startswith(package + ".")}


def _reaching(sources: Iterable[str], targets: Iterable[str]) -> list[str]:
    """The imports from a module of ``sources`` into a package of ``targets``."""
    found = []
    for source in sources:
        for module, imported in sorted(_imports_of(f"{TOP}.{source}").items()):
            found += [
                f"{module} -> {t}"
                for t in sorted(imported)
                if any(t == f"{TOP}.{p}" or t.startswith(f"{TOP}.{p}.") for p in targets)
            ]
    return found


def test_render_imports_neither_the_pipeline_nor_export() -> None:
    """The views read documents (``models/``), never the code that makes them."""
    found = _reaching(["render"], ["pipeline", "export"])
    assert not found, "\n".join(found)


def test_the_estimator_and_the_rule_engine_never_import_the_benchmark() -> None:
    """They read bench figures as documents (``models.bench``), so they stay pure."""
    found = _reaching(["estimate", "engine"], ["bench"])
    assert not found, "\n".join(found)


def _wing(module: str) -> str:
    """The wing of a module of the estimator, or "top" for its top-level modules."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 or (len(parts) == 3 and parts[2] in WINGS) else "top"


def test_the_estimators_wings_import_one_way() -> None:
    """workload <- memory <- timing <- llm <- the top level: a wing imports only the
    wings below it (``workload`` none of the others)."""
    estimator = f"{TOP}.estimate"
    graph: dict[str, set[str]] = {}
    for module, imported in _imports_of(estimator).items():
        edges = graph.setdefault(_wing(module), set())
        edges |= {
            _wing(t)
            for t in imported
            if t.startswith(estimator + ".") and _wing(t) != _wing(module)
        }
    upward = _upward(graph, [*WINGS, "top"])
    assert not upward, "\n".join(upward)
