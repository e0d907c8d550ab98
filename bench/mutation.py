"""Kill rate of mutmut's mutants per area, and every survivor with its file:line and change.

    python bench/mutation.py --run           # a fresh mutmut run (pyproject [tool.mutmut]), then this
    python bench/mutation.py --run --sample  # the same on a systematic 30% of the mutants
    python bench/mutation.py --run --area converse --area plan  # other areas than compare, view
    python bench/mutation.py --recheck --area plan  # only the survivors again (tests added)
    python bench/mutation.py                 # only read the results mutmut left in mutants/

Prints JSON: per area (``compare``: src/assay/compare, ``view``: src/assay/view and
src/assay/store/queries.py, ``converse``: src/assay/tasks/converse, ``plan``: src/assay/plan
and src/assay/pipelines/plan.py) the counts by status and the kill rate, killed / (killed +
survived + no tests) with timeouts counted as killed, and the survivors (and mutants no
test reaches) as ``{"file", "line", "function", "old", "new"}``. See bench/mutation.md.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
AREAS = {"compare": ("src/assay/compare/",), "view": ("src/assay/view/",
                                                     "src/assay/store/queries.py"),
         "converse": ("src/assay/tasks/converse/",),
         "plan": ("src/assay/plan/", "src/assay/pipelines/plan.py")}
#: what ``--area`` mutates and the in-process tests that can kill its mutants (a test that
#: runs ``assay`` in a subprocess, or needs the embedded model, cannot or is too slow);
#: compare and view (the default) are pyproject's own [tool.mutmut] settings
AREA_RUNS: dict[str, tuple[list[str], list[str]]] = {
    "compare": (["src/assay/compare/*.py"],
                ["tests/compare/test_paired.py", "tests/compare/test_compare_store.py"]),
    "view": (["src/assay/view/*.py"],
             ["tests/view/test_view_http.py", "tests/view/test_view_details.py"]),
    "converse": (["src/assay/tasks/converse/*.py"],
                 ["tests/tasks/converse/test_builtin_cases.py",
                  "tests/tasks/converse/test_workfiles.py",
                  "tests/tasks/converse/test_converse_logic.py",
                  "tests/tasks/converse/test_converse.py::"
                  "test_a_raw_line_break_inside_a_json_string_is_read_and_truncation_is_not"]),
    "plan": (["src/assay/plan/*.py", "src/assay/pipelines/plan.py"],
             ["tests/plan/test_hub.py", "tests/plan/test_intent.py",
              "tests/plan/test_plan_hub.py", "tests/plan/test_retrieve.py",
              "tests/plan/test_report.py", "tests/plan/test_plan_logic.py",
              "tests/plan/test_plan_gaps.py",
              "tests/plan/test_checkpoints.py::test_answers_read_by_the_rules",
              "tests/plan/test_checkpoints.py::"
              "test_a_model_never_approves_and_reads_only_drops_and_adds_the_answer_names",
              "tests/plan/test_plan_quality.py::test_rules_and_bm25_meet_the_targets",
              "tests/plan/test_plan_run.py::"
              "test_the_plans_judge_goes_to_every_task_with_a_judge_role",
              "tests/plan/test_plan_run.py::"
              "test_bfcl_data_is_pulled_before_its_run_when_none_is_here",
              "tests/plan/test_plan_run.py::test_endpoint_credentials_never_reach_the_store"]),
}
#: runs mutmut with pyproject's [tool.mutmut] but the areas' files and tests (argv[1], JSON)
OVERLAY = """
import json, sys
import mutmut.configuration as c
mutate, tests = json.loads(sys.argv.pop(1))
base = c._config_reader
def reader():
    read = base()
    return lambda key, default: {"only_mutate": mutate,
                                 "pytest_add_cli_args_test_selection": tests}.get(
        key, read(key, default))
c._config_reader, c._config = reader, None
from mutmut.__main__ import cli  # after the patch: importing it may read the config
sys.argv[0] = "mutmut"
cli()
"""
#: every mutant whose number ends in 1, 4 or 7: a systematic 30% of each function's mutants
SAMPLE = "*__mutmut_*[147]"
#: ``--sample DIGITS``: the mutants whose number ends in one of DIGITS (``1``: 10%)
SAMPLE_OF = "*__mutmut_*[{}]"
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests",
          34: "skipped", 36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout",
          255: "timeout", None: "not checked"}


def _area(path: str) -> str | None:
    return next((a for a, prefixes in AREAS.items() if path.startswith(prefixes)), None)


def _function_lines(source: str) -> dict[str, int]:
    """``xǁClassǁmethod`` / ``x_function`` (mutmut's names) -> the def's first line."""
    out: dict[str, int] = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[f"x_{node.name}"] = node.lineno
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out[f"x\u01c1{node.name}\u01c1{item.name}"] = item.lineno
    return out


def _strip(lines: list[str]) -> list[str]:
    """A function's lines without the blank lines around it (the spans include some)."""
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def _change(mutated: list[str], spans: dict[str, list[int]], key: str, def_line: int
            ) -> tuple[int, str, str]:
    """The first changed line of mutant ``key`` against its original function."""
    base = key.rsplit("__mutmut_", 1)[0]
    o0, o1 = spans[base + "__mutmut_orig"]
    m0, m1 = spans[key]
    orig, mut = _strip(mutated[o0 - 1:o1 + 1]), _strip(mutated[m0 - 1:m1 + 1])
    # the copies differ in their def line's name only (below any decorator line)
    mut = [x.replace(key, base + "__mutmut_orig", 1) for x in mut]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=orig, b=mut).get_opcodes():
        if tag != "equal":
            return (def_line + i1, " ".join(x.strip() for x in orig[i1:i2]),
                    " ".join(x.strip() for x in mut[j1:j2]))
    return def_line, "", ""


def summarize() -> dict[str, Any]:
    """The areas' counts, kill rates and survivors, from mutants/**/*.meta."""
    areas: dict[str, Any] = {a: {"counts": Counter(), "survivors": [], "no_tests": []}
                             for a in AREAS}
    for meta_path in sorted(MUTANTS.glob("src/**/*.py.meta")):
        rel = str(meta_path.relative_to(MUTANTS))[:-len(".meta")]
        area = _area(rel)
        if area is None:
            continue
        meta = json.loads(meta_path.read_text())
        codes = meta["exit_code_by_key"]
        if not codes:
            continue
        spans = json.loads(meta_path.with_suffix("").with_suffix(".py.spans").read_text()
                           )["spans"]
        mutated = (MUTANTS / rel).read_text().splitlines()
        lines = _function_lines((ROOT / rel).read_text())
        for full, code in codes.items():
            status = STATUS.get(code, "suspicious")
            areas[area]["counts"][status] += 1
            if status in ("survived", "no tests"):
                key = full.rsplit(".", 1)[1]
                name = key.rsplit("__mutmut_", 1)[0]
                line, old, new = _change(mutated, spans, key, lines.get(name, 0))
                fn = name[2:] if name.startswith("x_") else name[1:].replace("\u01c1", ".")
                entry = {"file": rel, "line": line, "function": fn, "old": old, "new": new,
                         "mutant": full}
                areas[area]["survivors" if status == "survived" else "no_tests"].append(entry)
    out: dict[str, Any] = {}
    for area, info in areas.items():
        c = info["counts"]
        killed = c["killed"] + c["timeout"]
        judged = killed + c["survived"] + c["no tests"]
        out[area] = {"counts": dict(c), "kill_rate": round(killed / judged, 4) if judged else None,
                     "survivors": info["survivors"], "no_tests": info["no_tests"]}
    return out


def main() -> int:
    """Run mutmut when asked, then print the summary as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="store_true", help="run 'mutmut run' first")
    ap.add_argument("--sample", nargs="?", const="147", metavar="DIGITS",
                    help=f"with --run: only the mutants matching {SAMPLE!r} (30%%); with "
                    "DIGITS, those whose number ends in one of them (1: 10%%)")
    ap.add_argument("--max-children", type=int, default=2)
    ap.add_argument("--brief", action="store_true", help="counts and rates only")
    ap.add_argument("--area", action="append", choices=sorted(AREA_RUNS),
                    help="with --run: mutate this area (repeatable); default: pyproject's "
                    "[tool.mutmut] (compare and view)")
    ap.add_argument("--without", action="append", default=[], metavar="TEST",
                    help="with --area: leave this test (file or node id) out, e.g. to "
                    "measure the kill rate before it was written (repeatable)")
    ap.add_argument("--recheck", action="store_true",
                    help="instead of --run: run again only the mutants that survived (or "
                    "had no test) in mutants/, e.g. after adding tests; the others keep "
                    "their verdicts (a killed mutant stays killed when tests are added)")
    args = ap.parse_args()
    names: list[str] = []
    if args.recheck:
        if not MUTANTS.is_dir():
            print("error: no mutants/ folder to recheck; run with --run first",
                  file=sys.stderr)
            return 2
        names = [e["mutant"] for r in summarize().values()
                 for e in r["survivors"] + r["no_tests"]]
        if not names:
            print("nothing to recheck: no mutant survived", file=sys.stderr)
        # which tests reach which function: collected again, so the new tests count
        (MUTANTS / "mutmut-stats.json").unlink(missing_ok=True)
    if args.run or names:
        if args.run:  # from scratch: mutmut may keep verdicts made with older tests
            shutil.rmtree(MUTANTS, ignore_errors=True)
        run = ["run", "--max-children", str(args.max_children),
               *(names or ([SAMPLE_OF.format(args.sample)] if args.sample else []))]
        if args.area:
            mutate = [p for a in args.area for p in AREA_RUNS[a][0]]
            tests = [t for a in args.area for t in AREA_RUNS[a][1] if t not in args.without]
            command = [sys.executable, "-c", OVERLAY, json.dumps([mutate, tests]), *run]
        else:
            command = [str(Path(sys.executable).with_name("mutmut")), *run]
        subprocess.run(command, cwd=ROOT, check=False)
    if not MUTANTS.is_dir():
        print("error: no mutants/ folder; run with --run first", file=sys.stderr)
        return 2
    result = summarize()
    if args.brief:
        result = {a: {"counts": r["counts"], "kill_rate": r["kill_rate"]}
                  for a, r in result.items()}
    print(json.dumps(result, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
