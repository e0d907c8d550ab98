"""Answer verification: does a solver reproduce each generated problem's stated answer?

Two thirds of solvers must confirm (reference/judging.md §11); :func:`near_duplicates` flags
problems that copy a reference.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.data.files import sha256_file
from assay.errors import ConfigError
from assay.metrics.stats import proportion
from assay.metrics.summary import clustered_rate
from assay.scoring import score_math
from assay.tasks.base import LoadedData, Task, run_params_of
from assay.tasks.capabilities import Measure
from assay.tasks.datagen.problem import load_problems
from assay.tasks.info import TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import task

SOLVER_PROMPT = (
    "Solve the following competition math problem. Think step by step, then give the final "
    "answer as \\boxed{{ANSWER}} on the last line.\n\nProblem: {problem}"
)


class VerifyOptions(TaskOptions):
    """Options of ``datagen_verify``."""

    data: str | None = PathField(None, description="Generated problems.")
    max_tokens: int | None = Field(None, description="Max tokens per solution (default 1024).")


@task("datagen_verify")
class VerifyTask(Task):
    """Solve generated problems and check the stated answers (math-verify)."""

    description = "Solve generated problems with a solver model; math-verify agreement with the stated answer."
    headline_metric = "agreement_rate"
    info = TaskInfo(plannable=False, runs_here="assay.tasks.datagen:runs_in_a_plan",
                    measures=(Measure(capability="data_quality", standing="supporting",
                                      why=("checks each generated problem's stated answer by solving it, "
                                           "beside the judge")),),
                    tags=("datagen",))
    Options = VerifyOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        self.opts: VerifyOptions = VerifyOptions.model_validate(self.options)
        if not self.opts.data:
            raise ConfigError("datagen verify needs the generated problems: --data FILE")

    def read(self) -> LoadedData:
        problems = load_problems(self.opts.data)
        samples = [Sample(id=p.problem_id, input=p.problem, target=p.answer,
                          metadata={"topic": p.topic}, row=p.to_dict()) for p in problems]
        info = {"source": "file", "path": str(self.opts.data),
                "content_hash": sha256_file(self.opts.data), "problems": len(problems)}
        return LoadedData(samples, info, dict(self.options))

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        """Room to reason; the run's parameters (``ctx.params``) win."""
        return {"max_tokens": self.opts.max_tokens or 1024, **run_params_of(ctx)}

    def build_messages(self, sample: Sample) -> list[Message]:
        return [Message("user", SOLVER_PROMPT.format(problem=sample.input))]

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        """math-verify equivalence of the solver's answer and the stated one."""
        s = score_math(outcome.output, str(sample.target))
        return [Score("verified", s.value, s.answer, s.explanation, s.metadata)]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        scored = [r for r in results if r.error is None and r.scores]
        return {"agreement_rate": clustered_rate(
                    scored, lambda r: 1.0 if r.score_value("verified") == 1.0 else 0.0),
                "n_samples": len(results), "n_scored": len(scored),
                "n_errors": len(results) - len(scored),
                "extraction_rate": proportion(
                    sum(1 for r in scored if r.scores["verified"].get("answer") is not None),
                    len(scored))}


def verification_summary(runs: list[tuple[str, list[SampleResult]]],
                         quorum: float = 2 / 3) -> dict[str, Any]:
    """Combine solver runs: per-solver agreement, unreproduced and confirmed problems."""
    per_solver = {}
    votes: dict[str, list[bool]] = {}
    for solver, results in runs:
        per_solver[solver] = VerifyTask.metrics(results)["agreement_rate"]
        for r in results:
            if r.error is None and r.scores:
                votes.setdefault(r.sample_id, []).append(r.score_value("verified") == 1.0)
    unreproduced = sorted(pid for pid, v in votes.items() if not any(v))
    confirmed = sorted(pid for pid, v in votes.items() if v and sum(v) / len(v) >= quorum)
    n = len(votes)
    return {"solvers": list(per_solver), "per_solver_agreement": per_solver,
            "any_solver_agrees": proportion(n - len(unreproduced), n), "quorum": quorum,
            "confirmed_by_quorum": proportion(len(confirmed), n),
            "unreproduced": unreproduced, "confirmed": confirmed}


_WORD = re.compile(r"\w+")


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    return {tuple(words[i:i + n]) for i in range(max(0, len(words) - n + 1))}


def near_duplicates(generated: list[Any], references: list[Any], n: int = 8,
                    threshold: float = 0.5) -> list[dict[str, Any]]:
    """Generated problems sharing at least ``threshold`` of their word ``n``-grams with a
    reference problem (containment of the generated problem's n-grams)."""
    ref_grams = [(r.problem_id, _ngrams(r.problem, n)) for r in references]
    flagged = []
    for g in generated:
        grams = _ngrams(g.problem, n)
        if not grams:
            continue
        best_id, best = None, 0.0
        for rid, rg in ref_grams:
            if rg:
                overlap = len(grams & rg) / len(grams)
                if overlap > best:
                    best_id, best = rid, overlap
        if best >= threshold:
            flagged.append({"problem_id": g.problem_id, "reference_id": best_id,
                            "overlap": round(best, 3)})
    return flagged
