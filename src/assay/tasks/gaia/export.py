"""The GAIA leaderboard submission: JSONL lines ``{task_id, model_answer, reasoning_trace}``
(the bare answer as a string: the scorer neither strips ``FINAL ANSWER:`` nor takes
non-strings) and a SUBMISSION_GUIDE.md saying whether the official per-level counts are met.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_open, atomic_write_text
from assay.core.types import SampleResult
from assay.metrics.format import counted
from assay.tasks.gaia.layouts import OFFICIAL_COUNTS

LEADERBOARD_URL = "https://huggingface.co/spaces/gaia-benchmark/leaderboard"


def submission_lines(results: list[SampleResult],
                     include_reasoning: bool = True) -> list[dict[str, Any]]:
    """One line per task (first epoch); errors give an empty answer."""
    lines = []
    for r in results:
        if r.epoch != 0:
            continue
        s = (r.scores or {}).get("gaia") or {}
        answer = s.get("answer")
        line: dict[str, Any] = {"task_id": r.sample_id,
                                "model_answer": "" if answer is None else str(answer)}
        if include_reasoning:
            line["reasoning_trace"] = r.output or (f"error: {r.error}" if r.error else "")
        lines.append(line)
    return lines


def write_jsonl(lines: list[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    return path


def check_counts(split: str, levels: Counter[int]) -> tuple[bool, str]:
    """Whether per-level counts equal the leaderboard's, with a sentence saying so."""
    want = OFFICIAL_COUNTS.get(split)
    if want is None:
        return False, f"unknown split {split!r}"
    got = {k: levels.get(k, 0) for k in (1, 2, 3)}
    if got == want:
        return True, (f"per-level counts {got} equal the leaderboard's for the {split} split: "
                      "the file can be submitted")
    return False, (f"per-level counts {got} differ from the leaderboard's {want} for the {split} "
                   "split: the leaderboard will reject this file; run every task of the split "
                   "(no --limit, no --level) to submit")


def write_submission(run: dict[str, Any], results: list[SampleResult], out_dir: Path
                     ) -> dict[str, Path]:
    opts = run["spec"].get("task_options") or {}
    split = opts.get("split") or "validation"
    lines = submission_lines(results)
    levels = Counter((r.metadata or {}).get("level") for r in results if r.epoch == 0)
    ok, counts_line = check_counts(split, levels)
    errors = sum(1 for r in results if r.epoch == 0 and r.error)
    path = write_jsonl(lines, out_dir / "gaia_submission.jsonl")
    scored = split != "test"
    guide = out_dir / "SUBMISSION_GUIDE.md"
    atomic_write_text(guide, "\n".join([
        "# Submitting to the GAIA leaderboard",
        "",
        f"File: `{path.name}` ({len(lines)} lines), from run `{run['id']}` "
        f"({run['model'].get('model')}), split **{split}**.",
        "",
        "## Is this file ready?",
        "",
        f"- {'Yes' if ok else 'No'}: {counts_line}.",
        f"- {counted(errors, 'task')} ended in an error, with an empty answer (scored wrong)."
        if errors else "- No task ended in an error.",
        "- Test split: the gold answers are private, so assay scored nothing; the leaderboard "
        "scores the upload." if not scored else
        "- Validation split: assay's `official` score uses the leaderboard's own rules, so the "
        "leaderboard should give the same number for the same file.",
        "",
        "## Rules (from the leaderboard)",
        "",
        "- JSON Lines, one object per task: `task_id` and `model_answer` (a string) are "
        "required, `reasoning_trace` is optional.",
        "- `model_answer` is the bare answer: the scorer does not strip `FINAL ANSWER:`.",
        "- Every `task_id` must belong to the chosen split, and every task of the split must be "
        "present: 53/86/26 tasks at levels 1/2/3 for validation (165), 93/159/49 for test (301).",
        "- Score = correct / 165 (validation) or / 301 (test); per-level scores divide by the "
        "level's count.",
        "",
        "## How to submit",
        "",
        f"1. Open {LEADERBOARD_URL} and go to the submission form.",
        f"2. Choose the split `{split}`, fill in model name, family, system prompt, URL, "
        "organisation and contact e-mail.",
        f"3. Upload `{path.name}`.",
        "",
    ]), encoding="utf-8")
    return {"gaia_submission": path, "gaia_submission_guide": guide}
