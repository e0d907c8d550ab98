"""A generation run read back from the store: its problems, its failures, and their files.

Older runs kept them in the ``valid`` score's metadata, not the outcome's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_open
from assay.core.types import SampleResult
from assay.tasks.datagen.problem import Problem, save_problems


def solve_metadata(result: SampleResult) -> dict[str, Any]:
    """What the solve stored about one sample (``Outcome.metadata``)."""
    return (result.outcome or {}).get("metadata") or {}


def _score_metadata(result: SampleResult) -> dict[str, Any]:
    return ((result.scores or {}).get("valid") or {}).get("metadata") or {}


def generated_problem(result: SampleResult) -> dict[str, Any] | None:
    """The problem a sample generated (with its provenance), or ``None``."""
    return solve_metadata(result).get("problem") or _score_metadata(result).get("problem")


def generation_failures(result: SampleResult) -> list[dict[str, Any]]:
    """Every rejected attempt of a sample: ``{"attempt", "reasons", "raw"}``, oldest first."""
    meta = solve_metadata(result)
    if "failures" in meta:
        return list(meta["failures"] or [])
    old = _score_metadata(result)
    return list(old.get("failure") or old.get("retries") or [])


def _problems(run: dict[str, Any], results: list[SampleResult]) -> list[Problem]:
    out: list[Problem] = []
    seen: set[str] = set()
    model = (run.get("model") or {}).get("model")
    for r in results:
        if r.error is not None or r.score_value("valid") != 1.0:
            continue
        d = dict(generated_problem(r) or {})
        if not d:
            continue
        pid = r.sample_id if r.epoch == 0 else f"{r.sample_id}-e{r.epoch}"
        if pid in seen:
            continue
        seen.add(pid)
        prov = dict(d.get("provenance") or {})
        prov.setdefault("model", model)
        prov["run_id"] = run["id"]
        if r.epoch:
            prov["epoch"] = r.epoch
        d.update(problem_id=pid, provenance=prov)
        out.append(Problem(**{k: v for k, v in d.items() if k in Problem.__dataclass_fields__}))
    return out


def _failures(run_id: str, results: list[SampleResult]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        meta = r.metadata or {}
        base = {"run_id": run_id, "sample_id": r.sample_id, "epoch": r.epoch,
                "topic": meta.get("topic"), "reference_id": meta.get("reference_id")}
        if r.error is not None:
            out.append({**base, "kind": "error", "error": r.error, "attempts": None, "failure": []})
        elif r.score_value("valid") != 1.0:
            attempts = solve_metadata(r).get("attempts", _score_metadata(r).get("attempts"))
            out.append({**base, "kind": "invalid", "error": None, "attempts": attempts,
                        "failure": generation_failures(r)})
    return out


def problems_from_run(store: Any, run_id: str) -> list[Problem]:
    """The valid problems of a generation run, each once, with provenance (run id, model)."""
    run = store.get_run(run_id)
    return _problems(run, store.results(run["id"], transcripts=False))


def failures_from_run(store: Any, run_id: str) -> list[dict[str, Any]]:
    """Samples without a problem: ``kind`` ``invalid`` (never validated, with each attempt's
    reasons) or ``error`` (the call failed; ``--resume`` retries these)."""
    run = store.get_run(run_id)
    return _failures(run["id"], store.results(run["id"], transcripts=False))


def run_files(run: dict[str, Any], results: list[SampleResult], out: Path) -> dict[str, Any]:
    """A run's problems at ``out`` and its failures at ``<stem>_failures.jsonl`` beside it."""
    problems, failures = _problems(run, results), _failures(run["id"], results)
    path = save_problems(problems, out)
    fail_path = path.with_name(f"{path.stem}_failures.jsonl")
    with atomic_open(fail_path) as f:
        for row in failures:
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return {"problems": path, "failures": fail_path, "n_problems": len(problems),
            "n_failures": len(failures)}


def write_outputs(store: Any, run_id: str, out_path: str | Path) -> dict[str, Any]:
    """:func:`run_files` of a stored run (``.jsonl``: JSONL, else the book's JSON list)."""
    run = store.get_run(run_id)
    return run_files(run, store.results(run["id"], transcripts=False), Path(out_path))
