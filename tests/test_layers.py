"""The layers of DESIGN.md hold, checked by tools rather than by review: import-linter's
contract in pyproject.toml (a layer imports only the layers below it, with no exception
listed), and no import cycle between modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_layer_contract_passes() -> None:
    p = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import "
                        "lint_imports; sys.exit(lint_imports(no_cache=True))"],
                       cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert "Contracts: 1 kept, 0 broken." in p.stdout, p.stdout[-2000:]


def test_no_breach_is_ignored() -> None:
    """The contract lists no exceptions: every layer breach is gone, none may come back."""
    text = (REPO / "pyproject.toml").read_text()
    contract = text[text.index("[tool.importlinter]"):]
    assert "ignore_imports" not in contract


def _cycles() -> list[set[str]]:
    """Strongly connected components of more than one module in assay's import graph."""
    import grimp

    graph = grimp.build_graph("assay", include_external_packages=False)
    adj = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(adj):  # Tarjan, iteratively (no recursion limit)
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            if i < len(adj[v]):
                work.append((v, i + 1))
                w = adj[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return found


def test_no_import_cycle() -> None:
    cycles = [sorted(c) for c in _cycles()]
    assert cycles == [], f"import cycles: {cycles}"
