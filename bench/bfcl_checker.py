"""Our BFCL checker against the official one, in the same process.

Scores every AST-checked entry (2,501) and every relevance entry (1,140) of the
official v4 data with both implementations:

- ``decoded``: answers built from the ground truth, already decoded, straight
  into the AST checker (what the official ``ast_checker`` call costs);
- ``prompt``: the same answers rendered as prompt text, then decode + format
  check + AST check (the whole official prompt-mode path);
- ``relevance``: a text answer and a call for every relevance entry, decoded
  and judged (2,280 outputs);
- ``relevance_varied``: seven outputs per relevance entry, closer to what models
  write: the entry's own question as prose, ``""``, ``[]``, a call with the
  function's required parameters, the same call bare, in a code fence and after
  "Sure: " (7,980 outputs).

For every path: our rate and the official rate (outputs per second, best of
``--repeat`` runs, the two run in turns), their ratio (``speedup``: our rate / official rate) and the
number of outputs whose verdicts differ (``disagreements``, must be 0). Import
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
sys.path.insert(0, str(ROOT / "tests" / "tasks" / "bfcl"))

import official_oracle as oracle  # noqa: E402
from bfcl_prompt_text import calls_to_prompt_text  # noqa: E402

from assay.tasks.bfcl.categories import AST, RELEVANCE, language_of  # noqa: E402
from assay.tasks.bfcl.checker import check_ast, check_relevance  # noqa: E402
from assay.tasks.bfcl.decode import DecodeError, decode_prompt  # noqa: E402


def import_time(code: str) -> float:
    """Seconds to run ``code`` in a fresh interpreter, minus the interpreter's own start."""
    env_code = f"import time; t = time.perf_counter(); {code}; print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", env_code], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tests/tasks/bfcl'}",
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


_PLACEHOLDERS = {"string": "x", "integer": 1, "float": 1.5, "boolean": True, "array": [1],
                 "dict": {"k": "v"}, "tuple": (1, 2)}


def varied_relevance_cases() -> list[dict[str, Any]]:
    cases = []
    for cat in RELEVANCE:
        questions, _ = oracle.entries(cat)
        for q in questions:
            fn = (q["function"] or [{"name": "f", "parameters": {"properties": {"a": {}}}}])[0]
            props = fn["parameters"].get("properties", {})
            required = fn["parameters"].get("required", list(props))
            call = calls_to_prompt_text([{fn["name"]: {
                p: _PLACEHOLDERS.get(props.get(p, {}).get("type", ""), "v") for p in required}}],
                "python")
            prose = next((m["content"] for m in q["question"][0] if m["role"] == "user"), "")
            for text in (prose, "", "[]", call, call[1:-1], f"```\n{call}\n```",
                         f"Sure: {call}"):
                cases.append({"cat": cat, "text": text})
    return cases


def timed_pair(mine: Any, theirs: Any, repeat: int) -> tuple[float, Any, float, Any]:
    """Best times of ``mine`` and ``theirs``, run in turns so that both see the same load
    (on a shared machine, load that changes between two blocks of runs skews the ratio)."""
    best = [float("inf"), float("inf")]
    results: list[Any] = [None, None]
    for _ in range(repeat):
        for k, fn in enumerate((mine, theirs)):
            t = time.perf_counter()
            results[k] = fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best[0], results[0], best[1], results[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each; the best is reported")
    args = ap.parse_args()
    if not oracle.available():
        raise SystemExit("bfcl-eval is not installed; see .ci/run for the light install")
    oracle.load()  # import the official checker before anything is timed
    cases = build_cases()
    rel = relevance_cases()
    varied = varied_relevance_cases()

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

    def ours_relevance(outputs: list[dict[str, Any]]) -> list[bool]:
        out = []
        for c in outputs:
            try:
                d, ok = decode_prompt(c["text"], "python"), True
            except DecodeError:
                d, ok = None, False
            out.append(check_relevance(ok, d, category=c["cat"]).valid)
        return out

    def official_relevance(outputs: list[dict[str, Any]]) -> list[bool]:
        return [(oracle.official_relevance_has_call(c["text"]) == (c["cat"] == "live_relevance"))
                for c in outputs]

    report: dict[str, Any] = {"ast_entries": len(cases), "relevance_cases": len(rel),
                              "relevance_varied_cases": len(varied)}
    for name, mine, theirs, n in (
            ("decoded", ours_decoded, official_decoded, len(cases)),
            ("prompt", ours_prompt, official_prompt, len(cases)),
            ("relevance", lambda: ours_relevance(rel), lambda: official_relevance(rel), len(rel)),
            ("relevance_varied", lambda: ours_relevance(varied),
             lambda: official_relevance(varied), len(varied))):
        t_ours, v_ours, t_off, v_off = timed_pair(mine, theirs, args.repeat)
        report[name] = {
            "assay_entries_per_s": round(n / t_ours), "official_entries_per_s": round(n / t_off),
            "speedup": round(t_off / t_ours, 2), "assay_passed": sum(v_ours),
            "official_passed": sum(v_off),
            "disagreements": sum(a != b for a, b in zip(v_ours, v_off, strict=True)),
        }
    paths = ("decoded", "prompt", "relevance", "relevance_varied")
    report["min_speedup"] = min(report[p]["speedup"] for p in paths)
    report["disagreements"] = sum(report[p]["disagreements"] for p in paths)
    report["import_s"] = {
        "assay_checker": round(statistics.median(
            import_time("import assay.tasks.bfcl.checker") for _ in range(3)), 4),
        "assay_checker_and_decoder": round(statistics.median(
            import_time("import assay.tasks.bfcl.checker, assay.tasks.bfcl.decode")
            for _ in range(3)), 4),
        "official_light_install": round(statistics.median(
            import_time("import official_oracle; official_oracle.load()") for _ in range(3)), 4),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
