"""Function-local imports only where a module is heavy, optional or kept off start-up,
each saying which with a one-word reason (issue 23: no coupling hidden inside functions).

A module imports what it uses at its top; an import inside a function must end its first
line with ``# heavy`` (slow to import: scipy, numpy, the Hub client, ...), ``# optional``
(an extra that may be absent: llama-cpp-python, pyarrow, datasets, ...) or ``# startup``
(kept off the command line's start: jinja2, aiohttp, rich, a package's lazy attributes).
"""

from __future__ import annotations

import ast
import re
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import tomllib

SRC = Path(__file__).resolve().parents[1] / "src" / "assay"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
REASON = re.compile(r"#\s*(heavy|optional|startup)\b")


def _local_imports() -> list[tuple[str, int, str, str, str]]:
    """(file, line, top-level module, enclosing function, first line) of each import made
    inside a function."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom):
                    top = "assay" if node.level else (node.module or "").split(".")[0]
                elif isinstance(node, ast.Import):
                    top = node.names[0].name.split(".")[0]
                else:
                    continue
                found.append((str(path.relative_to(SRC.parent)), node.lineno, top, fn.name,
                              lines[node.lineno - 1]))
    return found


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _core_distributions() -> set[str]:
    """assay's own dependencies and everything they install in turn (no extras)."""
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    todo = [re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0] for d in deps]
    seen: set[str] = set()
    while todo:
        name = _norm(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = requires(name) or []
        except PackageNotFoundError:
            continue
        todo += [re.split(r"[\s<>=!~;\[(]", r, maxsplit=1)[0] for r in reqs
                 if "extra ==" not in r]
    return seen


def test_every_function_local_import_says_why() -> None:
    missing = [f"{f}:{n}: {line.strip()}" for f, n, _, _, line in _local_imports()
               if not REASON.search(line)]
    assert not missing, ("imports inside functions without '# heavy', '# optional' or "
                         "'# startup' (or move them to the module's top):\n" + "\n".join(missing))


def test_assay_modules_are_imported_at_the_top() -> None:
    # the one exception: a package's lazy attributes (PEP 562 __getattr__)
    inside = [f"{f}:{n}: {line.strip()}" for f, n, top, fn, line in _local_imports()
              if top == "assay" and fn != "__getattr__"]
    assert not inside, "assay modules imported inside a function:\n" + "\n".join(inside)


def test_optional_means_not_a_core_dependency() -> None:
    core = _core_distributions()
    dists = packages_distributions()
    wrong = []
    for f, n, top, _, line in _local_imports():
        reason = REASON.search(line)
        if top == "assay" or top not in dists or reason is None:
            continue  # not installed here: nothing to check it against
        is_core = any(_norm(d) in core for d in dists[top])
        if (reason.group(1) == "optional") == is_core:
            wrong.append(f"{f}:{n}: {top} is {'a core' if is_core else 'an optional'} "
                         f"dependency but says '{reason.group(1)}'")
    assert not wrong, "\n".join(wrong)
