"""The layers of DESIGN.md hold, checked by tools rather than by review: import-linter's
contract in pyproject.toml (a layer imports only the layers below it, with no exception
listed), and no import cycle between modules."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_layer_contract_passes() -> None:
    p = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import "
                        "lint_imports; sys.exit(lint_imports(no_cache=True))"],
                       cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in p.stdout, p.stdout[-2000:]
    # the second contract (DESIGN.md, "Layers"): readers import no task, model, engine or
    # sandbox code, directly or through another module
    assert "readers import no task, model, engine or sandbox code KEPT" in p.stdout


def test_the_readers_contract_names_every_reader_and_what_they_may_not_import() -> None:
    import tomllib

    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    readers = next(c for c in contracts["contracts"] if c["type"] == "forbidden")
    assert set(readers["source_modules"]) == {
        "assay.reports", "assay.view", "assay.compare", "assay.review", "assay.web",
        "assay.plan.report", "assay.plan.report_render"}
    assert set(readers["forbidden_modules"]) == {
        "assay.tasks", "assay.models", "assay.engine", "assay.sandbox"}
    assert not readers.get("allow_indirect_imports")


def test_no_breach_is_ignored() -> None:
    """The contract lists no exceptions: every layer breach is gone, none may come back."""
    text = (REPO / "pyproject.toml").read_text()
    contract = text[text.index("[tool.importlinter]"):]
    assert "ignore_imports" not in contract


def _cycles() -> set[tuple[str, ...]]:
    """Each import cycle between assay's modules, as its modules in order of import.

    ``from P import m`` names the package ``P`` as well as the module ``P.m`` (it runs
    and reads ``P/__init__.py``), which grimp's graph leaves out: an ``__init__`` whose
    lazy ``__getattr__`` imports a module that imports the package back is a cycle."""
    import grimp

    graph = grimp.build_graph("assay", include_external_packages=False)
    for importer in list(graph.modules):
        for imported in list(graph.find_modules_directly_imported_by(importer)):
            for detail in graph.get_import_details(importer=importer, imported=imported):
                named = re.match(r"from\s+([\w.]+)\s+import\b", detail["line_contents"])
                if named and named[1] in graph.modules and named[1] != importer:
                    graph.add_import(importer=importer, imported=named[1])
    found = set()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                cycle = (importer, *back[:-1])
                first = cycle.index(min(cycle))
                found.add(cycle[first:] + cycle[:first])
    return found


def test_no_import_cycle() -> None:
    cycles = sorted(_cycles())
    assert len(cycles) == 0, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)
