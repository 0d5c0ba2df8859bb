"""The floors of the house are checked, not only written.

The import-linter contracts in ``pyproject.toml`` (``[tool.importlinter]``) say that
imports run one way, down the floors: the shell (``sewerwatch``) on top; ``web`` (the office);
``enforcement``;
``alerts``, ``lab``, ``dashboards``, ``simulators``, ``field``, ``fog``; ``ingest`` and ``limits``, independent of each
other; ``foundation`` at the bottom; and that the collectors never import the alert
manager. Lazy imports inside functions count as imports (grimp reads them too).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("foundation", "ingest", "limits", "alerts", "lab", "dashboards", "simulators", "field", "fog", "enforcement",
            "web", "sewerwatch")


def test_the_import_linter_contracts_are_kept():
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in proc.stdout


def test_every_top_level_package_is_under_the_contracts():
    import tomllib

    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert set(doc["tool"]["importlinter"]["root_packages"]) == set(PACKAGES)


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


def test_the_foundation_imports_no_other_package_and_nothing_imports_the_shell():
    graph = _package_graph()
    assert graph["foundation"] == set()
    assert not [p for p, deps in graph.items() if "sewerwatch" in deps]


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_readme_says_what_it_may_import(package):
    text = (ROOT / package / "README.md").read_text(encoding="utf-8")
    assert "May import:" in text
    assert "tests/test_layers.py" in text
