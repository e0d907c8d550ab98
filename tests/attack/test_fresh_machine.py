"""The test extras install what the tests use.

A suite that passes only because the machine had a package from elsewhere fails for the
next newcomer (``No module named 'jsonschema'`` on a fresh clone). So: every third-party
module the tests import, and every optional package the library asks for by name
(``_require(module, metric, package)``), must come from ``assay[dev]`` (its requirements
resolved with their extras) or from a ``pip install`` line of ``scripts/test``.
"""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def _closure(requirement: str) -> set[str]:
    """The distributions ``pip install requirement`` installs (installed metadata, markers
    evaluated for this interpreter and the requested extras)."""
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    todo = [Requirement(requirement)]
    while todo:
        req = todo.pop()
        key = (canonicalize_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        names.add(key[0])
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue  # not installed: the import check below names it
        for line in requires:
            sub = Requirement(line)
            envs = [{"extra": e} for e in req.extras] or [{"extra": ""}]
            if sub.marker is None or any(sub.marker.evaluate(env) for env in envs):
                todo.append(sub)
    return names


def _script_installs() -> set[str]:
    text = (ROOT / "scripts" / "test").read_text().replace("\\\n", " ")
    names: set[str] = set()
    for line in re.findall(r"pip install ([^\n]+)", text):
        for word in line.split():
            word = word.strip("\"'")
            if word.startswith("-") or word.startswith(".") or not word:
                continue
            names.add(canonicalize_name(Requirement(word).name))
    return names


def _allowed() -> set[str]:
    return _closure("assay[dev]") | _script_installs()


def _imported_modules(folder: Path) -> dict[str, str]:
    """Top-level module name -> a file that imports it (every import, local ones too)."""
    found: dict[str, str] = {}
    for path in folder.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def test_every_third_party_module_the_tests_import_comes_from_the_test_extras() -> None:
    local = {"tests"} | {p.stem for p in (ROOT / "tests").rglob("*.py")} | {
        p.name for p in (ROOT / "tests").rglob("*") if p.is_dir()}
    providers = metadata.packages_distributions()
    allowed = _allowed()
    missing = []
    for module, where in sorted(_imported_modules(ROOT / "tests").items()):
        if module in sys.stdlib_module_names or module in local or module in ("assay",
                                                                              "__future__"):
            continue
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists & allowed:
            missing.append(f"{module} (imported by {where}; from {sorted(dists) or 'nothing installed'})")
    assert not missing, "not installed by assay[dev] or scripts/test: " + "; ".join(missing)


def test_every_package_the_library_asks_for_by_name_comes_from_the_test_extras() -> None:
    asked = set()
    for path in (ROOT / "src").rglob("*.py"):
        for m in re.finditer(r"_require\(\s*\"[^\"]+\",\s*\"[^\"]+\",\s*\"([^\"]+)\"",
                             path.read_text(encoding="utf-8")):
            asked.add(canonicalize_name(m.group(1)))
    assert {"jsonschema", "sacrebleu", "rouge-score"} <= asked  # the scan still finds them
    assert not asked - _allowed(), f"not in assay[dev]: {sorted(asked - _allowed())}"
