"""Our BFCL checker against the official one, in the same process.

Scores every AST-checked entry (2,501) and every relevance entry (1,140) of the
official v4 data with both implementations:

- ``decoded``: answers built from the ground truth, already decoded, straight
  into the AST checker (what the official ``ast_checker`` call costs);
- ``prompt``: the same answers rendered as prompt text, then decode + format
  check + AST check (the whole official prompt-mode path);
- ``relevance``: a text answer and a call for every relevance entry, decoded
  and judged.

Verdicts are compared entry by entry (any disagreement is reported). Import
times are measured in fresh subprocesses. Needs the light install of
bfcl-eval (see .ci/run). Prints JSON.

Usage: python bench/bfcl_checker.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "benchmarks" / "bfcl"))

import official_oracle as oracle  # noqa: E402

from assay.benchmarks.bfcl.categories import AST, RELEVANCE, language_of  # noqa: E402
from assay.benchmarks.bfcl.checker import check_ast, check_relevance  # noqa: E402
from assay.benchmarks.bfcl.decode import DecodeError, calls_to_prompt_text, decode_prompt  # noqa: E402


def import_time(code: str) -> float:
    """Seconds to run ``code`` in a fresh interpreter, minus the interpreter's own start."""
    env_code = f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", env_code], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tests/benchmarks/bfcl'}",
                                        "BFCL_PROJECT_ROOT": "/tmp/bfcl-bench-root",
                                        "PATH": "/usr/bin:/bin"})
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return float(out.stdout.strip().splitlines()[-1])


def build_cases() -> list[dict[str, Any]]:
    """One case per AST entry: docs, ground truth and a ground-truth-built answer."""
    cases = []
    for cat in AST:
        questions, answers = oracle.entries(cat)
        lang = language_of(cat)
        for q, a in zip(questions, answers or [], strict=True):
            decoded = oracle.render(oracle.truth_calls(q["function"], a["ground_truth"]), lang,
                                    fc=False)
            cases.append({"cat": cat, "lang": lang, "docs": q["function"],
                          "gt": a["ground_truth"], "decoded": decoded,
                          "text": calls_to_prompt_text(decoded, lang)})
    return cases


def relevance_cases() -> list[dict[str, Any]]:
    cases = []
    for cat in RELEVANCE:
        questions, _ = oracle.entries(cat)
        for q in questions:
            name = q["function"][0]["name"] if q["function"] else "f"
            for text in ("I cannot help with that using these tools.", f"[{name}(x=1)]"):
                cases.append({"cat": cat, "text": text})
    return cases


def timed(fn: Any, repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each; the best is reported")
    args = ap.parse_args()
    if not oracle.available():
        raise SystemExit("bfcl-eval is not installed; see .ci/run for the light install")
    oracle.load()  # import the official checker before anything is timed
    cases = build_cases()
    rel = relevance_cases()

    def ours_decoded() -> list[bool]:
        return [check_ast(c["docs"], c["decoded"], c["gt"], language=c["lang"], category=c["cat"],
                          underscore_to_dot=False).valid for c in cases]

    def official_decoded() -> list[bool]:
        return [oracle.official_verdict(c["docs"], c["decoded"], c["gt"], c["lang"], c["cat"],
                                        fc=False)["valid"] for c in cases]

    def ours_prompt() -> list[bool]:
        out = []
        for c in cases:
            try:
                d = decode_prompt(c["text"], c["lang"])
            except DecodeError:
                out.append(False)
                continue
            out.append(check_ast(c["docs"], d, c["gt"], language=c["lang"], category=c["cat"],
                                 underscore_to_dot=False).valid)
        return out

    def official_prompt() -> list[bool]:
        return [oracle.official_prompt_verdict(c["docs"], c["text"], c["gt"], c["lang"],
                                               c["cat"])["valid"] for c in cases]

    def ours_relevance() -> list[bool]:
        out = []
        for c in rel:
            try:
                d, ok = decode_prompt(c["text"], "python"), True
            except DecodeError:
                d, ok = None, False
            out.append(check_relevance(ok, d, category=c["cat"]).valid)
        return out

    def official_relevance() -> list[bool]:
        return [(oracle.official_relevance_has_call(c["text"]) == (c["cat"] == "live_relevance"))
                for c in rel]

    report: dict[str, Any] = {"ast_entries": len(cases), "relevance_cases": len(rel)}
    for name, mine, theirs, n in (("decoded", ours_decoded, official_decoded, len(cases)),
                                  ("prompt", ours_prompt, official_prompt, len(cases)),
                                  ("relevance", ours_relevance, official_relevance, len(rel))):
        t_ours, v_ours = timed(mine, args.repeat)
        t_off, v_off = timed(theirs, args.repeat)
        report[name] = {
            "assay_entries_per_s": round(n / t_ours), "official_entries_per_s": round(n / t_off),
            "speedup": round(t_off / t_ours, 2), "assay_passed": sum(v_ours),
            "official_passed": sum(v_off),
            "disagreements": sum(a != b for a, b in zip(v_ours, v_off, strict=True)),
        }
    report["import_s"] = {
        "assay_checker": round(statistics.median(
            import_time("import assay.benchmarks.bfcl.checker") for _ in range(3)), 4),
        "assay_checker_and_decoder": round(statistics.median(
            import_time("import assay.benchmarks.bfcl.checker, assay.benchmarks.bfcl.decode")
            for _ in range(3)), 4),
        "official_light_install": round(statistics.median(
            import_time("import official_oracle; official_oracle.load()") for _ in range(3)), 4),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
