"""The floors of the house are checked, not only written.

The import-linter contracts in ``pyproject.toml`` (``[tool.importlinter]``) say that
imports run one way, down the floors: the shell (``sewerwatch``) on top; ``web`` (the office);
``ereport`` (electronic reporting: the portal's record); ``enforcement``; ``alerts``, ``lab``,
``dashboards``, ``simulators``, ``field``, ``fog``; ``ingest``, ``limits`` and ``identity`` (accounts and
roles), independent of each other; ``foundation`` at the bottom; that the collectors never
import the alert manager; and that ``sewerwatch portal`` reaches nothing of the office. No
loop either, between packages or between the modules of one package. Lazy imports inside
functions count as imports (grimp reads them too).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
import pytest
from tree_files import project_files

ROOT = Path(__file__).resolve().parent.parent
#: Every top-level package, as the contracts name them.
PACKAGES = tuple(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                 ["tool"]["importlinter"]["root_packages"])


def test_the_import_linter_contracts_are_kept():
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in proc.stdout


def _package_graph() -> dict[str, set[str]]:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    out: dict[str, set[str]] = {p: set() for p in PACKAGES}
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = importer.split(".")[0], imported.split(".")[0]
            if a != b and b in out:
                out[a].add(b)
    return out


def test_no_import_cycle_between_top_level_packages():
    graph = _package_graph()
    state: dict[str, int] = {}

    def visit(p: str, path: list[str]) -> None:
        state[p] = 1
        for q in sorted(graph[p]):
            if state.get(q) == 1:
                pytest.fail("import cycle: " + " -> ".join(path + [p, q]))
            if q not in state:
                visit(q, path + [p])
        state[p] = 2

    for p in PACKAGES:
        if p not in state:
            visit(p, [])


def _loops(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, kept
    iterative: a deep chain of imports needs no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _module_edges(graph) -> dict[str, set[str]]:
    """importer -> the modules of its own top-level package it imports."""
    return {m: {i for i in graph.find_modules_directly_imported_by(m) if i.split(".")[0] == m.split(".")[0]}
            for m in graph.modules}


def test_no_import_loop_between_the_modules_of_one_package():
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    loops = _loops(_module_edges(graph))

    def ties(loop: list[str]) -> str:
        return "; ".join(f"{a} -> {b}" for a in loop for b in sorted(graph.find_modules_directly_imported_by(a))
                         if b in loop)

    assert not loops, "import loops (move what both sides need to the lower module):\n" + "\n".join(
        ties(c) for c in loops)


def test_the_loop_finder_finds_a_loop():
    """The finder itself, on a graph with two loops and a chain (so the test above can fail)."""
    edges = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.e"}, "p.e": {"p.d", "p.a"}, "p.f": {"p.a"}}
    assert sorted(_loops(edges)) == [["p.a", "p.b", "p.c"], ["p.d", "p.e"]]
    assert _loops({"p.a": {"p.b"}, "p.b": set()}) == []


def test_the_portal_command_line_imports_nothing_of_the_office():
    """``sewerwatch portal`` does its work through ``ereport``: importing its module and every
    module its handlers import (lazily, inside them) loads no module of ``web``; the same
    check of the shell's office module finds the office, so the check can fail."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)

    def loaded(cli_module: str) -> list[str]:
        wanted = sorted({cli_module, *graph.find_modules_directly_imported_by(cli_module)})
        code = ("import importlib, sys\n"
                f"for m in {wanted!r}: importlib.import_module(m)\n"
                "print('\\n'.join(sorted(m for m in sys.modules if m == 'web' or m.startswith('web.'))))")
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout.split()

    assert "ereport.record" in graph.find_modules_directly_imported_by("sewerwatch.cli_portal")
    assert loaded("sewerwatch.cli_portal") == []
    assert "web.server" in loaded("sewerwatch.office")


def test_the_foundation_imports_no_other_package_and_nothing_imports_the_shell():
    graph = _package_graph()
    assert graph["foundation"] == set()
    assert not [p for p, deps in graph.items() if "sewerwatch" in deps]


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_readme_says_what_it_may_import(package):
    text = (ROOT / package / "README.md").read_text(encoding="utf-8")
    assert "May import:" in text
    assert "tests/test_layers.py" in text


#: The most lines a module may have: a room a newcomer reads in one sitting.
MODULE_MAX_LINES = 700
#: Beside the packages, the other folders of Python the house holds.
OTHER_TREES = ("tests", "scripts", "benchmarks")


def _modules() -> list[Path]:
    """Every ``.py`` of the packages, the tests, the scripts and the benchmarks."""
    return [path for top in (*PACKAGES, *OTHER_TREES) for path in project_files(ROOT, top, "*.py")]


def test_no_module_is_over_700_lines():
    modules = _modules()
    assert ROOT / "tests" / "test_layers.py" in modules and ROOT / "benchmarks" / "web.py" in modules
    long = {}
    for path in modules:
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MODULE_MAX_LINES:
            long[str(path.relative_to(ROOT))] = n
    assert not long, f"modules over {MODULE_MAX_LINES} lines (split them along their sections): {long}"
