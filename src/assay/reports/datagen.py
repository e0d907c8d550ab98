"""The generated-data report: generation, judges, win rate, verification, review.

Built from the pipeline's record and the report sections its steps stored when they ended
(each prefixed with the step's name); no step's task code is imported."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from assay.metrics.agreement import pairwise_agreement
from assay.metrics.format import counted, fmt_rate
from assay.reports.pages import write_pages
from assay.review.export import dataset_id_for_file
from assay.store.described import run_headline, run_report
from assay.store.review import DIMENSIONS, ReviewStore
from assay.store.sqlite import Store, workspace_dir

__all__ = ["judge_item_scores", "pipeline_dir", "pipeline_record", "review_status",
           "write_pipeline_report"]

GENERATE, JUDGE, WINRATE, VERIFY = ("datagen_generate", "datagen_judge", "datagen_winrate",
                                    "datagen_verify")


def pipeline_dir(pipeline_id: str) -> Path:
    """Folder of a pipeline's files (absolute: its steps' options name files in it)."""
    return (workspace_dir() / "datagen" / pipeline_id).resolve()


def pipeline_record(store: Store, pipeline_id: str) -> dict[str, Any]:
    """The pipeline's arguments, reference set, step runs, outputs and summaries."""
    run = store.get_run(pipeline_id)
    opts = run["spec"]["task_options"]
    metrics = run.get("metrics") or {}
    # the steps its last pass used (stored with its summaries when it finished), else
    # those recorded so far (a pipeline stored by an older assay: its children)
    steps = metrics.get("steps")
    if steps is None:
        steps = {}
        recorded = [(s["task"], s["run"]) for s in run.get("steps") or [] if s.get("run")]
        if not recorded:
            recorded = [(c["task"], c["id"]) for c in map(store.get_run,
                                                          store.children(run["id"]))]
        for task, child in recorded:
            steps.setdefault(task, []).append(child)

    def ids(task: str) -> list[str]:
        return list(steps.get(task) or [])

    dataset = run["dataset"] or {}
    return {
        "id": run["id"], "status": run["status"], "created_at": run["created_at"],
        "n": opts["n"], "model": run["spec"]["model"], "judge_models": opts["judge_models"],
        "solver_models": opts["solver_models"], "seed": opts["seed"],
        "reference": dataset.get("reference"),
        "notes": list(dataset.get("notes") or []) + list(metrics.get("notes") or []),
        "generate_run": next(iter(ids(GENERATE)), None),
        "outputs": metrics.get("outputs"),
        "judge_runs": ids(JUDGE), "jury": metrics.get("jury"),
        "winrate_run": next(iter(ids(WINRATE)), None),
        "near_duplicates": metrics.get("near_duplicates"),
        "verify_runs": ids(VERIFY), "verification": metrics.get("verification")}


def _step_sections(store: Store, run_id: str, label: str
                   ) -> tuple[list[dict[str, Any]], list[str]]:
    """A step's stored report sections (titles prefixed with ``label``) and recommendations."""
    run = store.get_run(run_id)
    described = run_report(run)
    sections = [{**sec, "title": f"{label}: {sec['title']}"}
                for sec in described.get("sections") or []]
    head = run_headline(run) if described.get("headline_metric") else None
    if head is not None:  # a step whose task names its headline: a line for it
        sections.insert(0, {"title": label, "headers": ["run", "model", head[0]],
                            "rows": [[run_id, run["model"].get("model"), fmt_rate(head[1])]]})
    return sections, list(described.get("recommendations") or [])


def judge_item_scores(store: Store, run_id: str) -> dict[str, dict[str, int]]:
    """``{problem_id: {dimension: score}}`` from a judge run's valid verdicts."""
    out: dict[str, dict[str, int]] = {}
    for r in store.results(run_id, transcripts=False):
        s = (r.scores or {}).get("rubric") or {}
        scores = (s.get("metadata") or {}).get("scores")
        if r.epoch == 0 and scores:
            out[r.sample_id] = scores
    return out


def review_status(problems_path: Path, judge_scores: dict[str, dict[str, int]] | None = None
                  ) -> dict[str, Any] | None:
    """Review statuses and kappa per dimension (reviewers and judge); None before any review."""
    rs = ReviewStore()
    try:
        did = dataset_id_for_file(problems_path)
        reviews = rs.reviews_for(did)
        ratings = rs.ratings(did, DIMENSIONS, judge_scores=judge_scores) if reviews else {}
    finally:
        rs.close()
    if not reviews:
        return None
    agreement = {dim: pairwise_agreement(by_rater, labels=range(1, 6))
                 for dim, by_rater in ratings.items() if len(by_rater) >= 2}
    return {"statuses": dict(Counter(r.status for r in reviews)),
            "reviewers": sorted({r.reviewer for r in reviews}), "reviews": len(reviews),
            "agreement": agreement}


def write_pipeline_report(store: Store, record: dict[str, Any], folder: Path) -> dict[str, Path]:
    """``report.md`` and ``report.html`` in the pipeline folder."""
    sections: list[dict[str, Any]] = []
    recs: list[str] = list(record.get("notes") or [])
    ref = record.get("reference")
    facts: list[tuple[str, Any]] = [
        ("pipeline", record["id"]), ("generator", record["model"]),
        ("judges", ", ".join(record["judge_models"])),
        ("solvers", ", ".join(record.get("solver_models") or []) or "none"),
        ("requested problems", record["n"]), ("seed", record["seed"]),
        ("reference set", "none" if not ref else
         f"{ref.get('source')} ({ref.get('count')} problems)")]
    if ref and ref.get("fallback_reason"):
        facts.append(("reference note", "MATH-500 was used because the requested set was "
                      f"not reachable: {ref['fallback_reason']}"))
        recs.append("The AIME reference set was not reachable; MATH-500 (integer answers "
                    "first) stood in for it, so the win rate compares with MATH-500 problems.")
    outputs = record.get("outputs") or {}
    facts.append(("valid problems", f"{outputs.get('n_problems', 0)} written to "
                                    f"{outputs.get('problems', '-')}"))
    facts.append(("failed generations", f"{outputs.get('n_failures', 0)} (never written as "
                                        f"problems; see {outputs.get('failures', '-')})"))
    named = (("generate_run", "Generation"), ("winrate_run", "Win rate"))
    steps = [(record[key], label) for key, label in named if record.get(key)]
    steps += [(run_id, f"Judge {record['judge_models'][i]}")
              for i, run_id in enumerate(record.get("judge_runs") or [])]
    for run_id, label in steps:
        s, r = _step_sections(store, run_id, label)
        sections.extend(s)
        recs.extend(r)
    jury = record.get("jury")
    if jury:
        agreement = jury.get("agreement") or {}
        rows = [[dim, f"{v.get('mean_kappa'):.3f}" if isinstance(v, dict) and
                 v.get("mean_kappa") is not None else "n/a"]
                for dim, v in agreement.items() if isinstance(v, dict)]
        sections.append({"title": "Jury agreement (quadratic-weighted kappa)",
                         "headers": ["dimension", "mean kappa over judge pairs"], "rows": rows})
    for i, run_id in enumerate(record.get("verify_runs") or []):
        sections.extend(_step_sections(store, run_id, f"Solver {record['solver_models'][i]}")[0])
    ver = record.get("verification")
    if ver:
        sections.append({
            "title": "Answer verification",
            "headers": ["measure", "value"],
            "rows": [["at least one solver reproduces the answer",
                      fmt_rate(ver["any_solver_agrees"])],
                     [f"confirmed by >= {ver['quorum']:.0%} of solvers",
                      fmt_rate(ver["confirmed_by_quorum"])],
                     ["no solver reproduces the answer (flagged)",
                      ", ".join(ver["unreproduced"]) or "none"]]})
        if ver["unreproduced"]:
            recs.append(f"{counted(len(ver['unreproduced']), 'problem')} with an answer no "
                        "solver reproduces: check them first in the review page.")
    dups = record.get("near_duplicates")
    if dups is not None:
        sections.append({"title": "Near-duplicates of reference problems",
                         "headers": ["problem", "reference", "n-gram overlap"],
                         "rows": [[d["problem_id"], d["reference_id"], d["overlap"]]
                                  for d in dups] or [["none", "", ""]]})
    judge_runs = record.get("judge_runs") or []
    judged = judge_item_scores(store, judge_runs[0]) if judge_runs else None
    # the problems file may be gone (a moved or cleaned folder): the report still reads
    review = (review_status(Path(outputs["problems"]), judged)
              if outputs.get("problems") and Path(outputs["problems"]).is_file() else None)
    sections.append({"title": "Human review",
                     "headers": ["status", "reviews"],
                     "rows": [[k, v] for k, v in (review or {}).get("statuses", {}).items()]
                     or [["not reviewed yet", 0]],
                     "note": ("Open the review page with: assay review "
                              f"{outputs.get('problems', 'DATA')} --reviewer NAME")})
    rows = []
    for dim, agr in ((review or {}).get("agreement") or {}).items():
        for pair in agr["pairs"]:
            kappa = "n/a" if pair["kappa"] is None else f"{pair['kappa']:.3f}"
            rows.append([dim, " vs ".join(pair["raters"]), pair["n"], kappa])
    if rows:
        sections.append({"title": "Review agreement (quadratic-weighted kappa)",
                         "headers": ["dimension", "raters", "items", "kappa"], "rows": rows,
                         "note": "'judge' is the first judge's verdicts; each pair is compared "
                                 "on the items both scored."})
    return write_pages(folder, "sections", {
        "title": "Generated-data quality report", "subtitle": f"pipeline {record['id']}",
        "facts": facts, "sections": sections, "recommendations": list(dict.fromkeys(recs))},
        stem="report")
