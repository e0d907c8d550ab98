"""``datagen_winrate``: generated problems against real ones, judged blind in both orders.

Same item preferred in both orders: win/loss; otherwise a tie flagged ``inconsistent`` or
``mixed``; an order invalid after its retry makes the pair ``invalid``, excluded from every rate.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from assay.core.checks import check_number
from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.errors import ConfigError
from assay.scoring.judge import JudgeModels, RoleURL, jury_of, poll, read_json
from assay.scoring.judge import combine as combine_votes
from assay.tasks.base import LoadedData, RoleModel, Task, jury, run_params_of
from assay.tasks.capabilities import Measure
from assay.tasks.datagen.judge_prompts import rationale_limit
from assay.tasks.datagen.problem import Problem, load_problems
from assay.tasks.datagen.winrate_metrics import (
    SCORE_NAME,
    VALUES,
    winrate_metrics,
    winrate_report_extra,
)
from assay.tasks.info import TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import task

PROMPT_VERSION = "winrate-v1"
RAW_LIMIT = 2000
ORDERS = ("A", "B")  # A: generated is Problem 1; B: reference is Problem 1


def winner_schema(reason_max_length: int | None = 300) -> dict[str, Any]:
    """A verdict's schema: a reason (capped: a rambling model still gets to it), the winner."""
    reason: dict[str, Any] = {"type": "string"}
    if reason_max_length:
        reason["maxLength"] = int(reason_max_length)
    return {"type": "object",
            "properties": {"reason": reason,
                           "winner": {"type": "string", "enum": ["1", "2", "tie"]}},
            "required": ["reason", "winner"], "additionalProperties": False}


WINNER_SCHEMA = winner_schema()
WINNER_EXAMPLE = '{"reason": "<two or three sentences>", "winner": "1" | "2" | "tie"}'

PAIR_SYSTEM = (
    "You are an impartial judge of competition mathematics problems. You compare two "
    "problems and reply with JSON only."
)

PAIR_TEMPLATE = """Two AIME-style competition problems are shown below. Decide which one is the \
better AIME problem overall, considering:
- correctness: well-posed, with exactly one answer, and the stated answer is right;
- clarity: precise, unambiguous statement in standard notation;
- difficulty: a fair AIME-level challenge, solvable by hand through several insightful steps;
- completeness: every needed given is stated and a single integer answer from 0 to 999 is asked for.
The order in which the problems are shown says nothing about their quality; do not let it \
influence you. Do not prefer a problem because it is longer. Answer "tie" only when neither \
is better.
Reply with only a JSON object of this form:
{example}

[Problem 1]
{first}
[End of Problem 1]

[Problem 2]
{second}
[End of Problem 2]
"""

RETRY_TEMPLATE = (
    "Your reply could not be used: {why}. Reply again with only a JSON object of the form "
    '{example}, where "winner" is exactly "1", "2" or "tie". No other text.'
)


def render_problem(p: Problem, *, include_solution: bool = False) -> str:
    """A problem as the pairwise judge sees it: statement and answer (solution optional)."""
    text = f"{p.problem.strip()}\nAnswer: {str(p.answer).strip()}"
    if include_solution and (p.solution or "").strip():
        text += f"\nSolution: {p.solution.strip()}"
    return text


class _PairVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    winner: str
    reason: Any = ""

    @field_validator("winner", mode="before")
    @classmethod
    def _winner(cls, v: Any) -> str:
        if isinstance(v, bool):
            raise ValueError("a boolean is not a winner")
        if isinstance(v, int | float) and v in (1, 2):
            return str(int(v))
        if not isinstance(v, str):
            raise ValueError(f"{type(v).__name__} is not a winner")
        s = re.sub(r"^(problem|option)\s*", "", v.strip().lower()).strip()
        if s in ("1", "2", "tie"):
            return s
        raise ValueError(f"winner {v!r} is not \"1\", \"2\" or \"tie\"")


def check_winner(text: str | None) -> tuple[dict[str, str] | None, str | None]:
    """``({"winner", "reason"}, None)`` for a valid pairwise verdict, else ``(None, why)``."""

    def build(obj: dict[str, Any]) -> tuple[dict[str, str] | None, str | None]:
        v = _PairVerdict.model_validate(obj)
        reason = v.reason if isinstance(v.reason, str) else json.dumps(v.reason)
        return {"winner": v.winner, "reason": reason}, None

    return read_json(text, build)


def parse_winner(text: str | None) -> dict[str, str] | None:
    """The pairwise verdict in a reply, or ``None`` when it is not a valid one."""
    return check_winner(text)[0]


def preferred_item(order: str, winner: str | None) -> str | None:
    """Map a positional verdict back to the item: ``generated``, ``reference``, ``tie``."""
    if winner is None:
        return None
    if winner == "tie":
        return "tie"
    gen_first = order == "A"
    return "generated" if (winner == "1") == gen_first else "reference"


def combine(pref_a: str | None, pref_b: str | None) -> dict[str, Any]:
    """``{"outcome": win|loss|tie|invalid, "inconsistent", "mixed"}`` from the two orders'
    item-level preferences (rules in the module docstring)."""
    if pref_a is None or pref_b is None:
        return {"outcome": "invalid", "inconsistent": False, "mixed": False}
    if "tie" in (pref_a, pref_b):
        return {"outcome": "tie", "inconsistent": False, "mixed": pref_a != pref_b}
    if pref_a != pref_b:
        return {"outcome": "tie", "inconsistent": True, "mixed": False}
    return {"outcome": "win" if pref_a == "generated" else "loss", "inconsistent": False,
            "mixed": False}


def seeded_pairs(generated: list[Problem], reference: list[Problem], *, seed: int,
                 n: int | None = None) -> list[tuple[Problem, Problem]]:
    """``n`` (default: the smaller set's size; at most ``len(generated)``) generated problems
    in file order, each with a reference drawn from seeded shuffles without replacement."""
    if not generated or not reference:
        raise ConfigError("win rate needs at least one generated and one reference problem")
    n = min(len(generated), len(reference)) if n is None else int(n)
    if n < 1:
        raise ConfigError(f"n_comparisons must be at least 1, got {n}")
    n = min(n, len(generated))
    rng = random.Random(f"assay-winrate:{seed}")
    chosen = sorted(rng.sample(range(len(generated)), n)) if n < len(generated) else list(
        range(len(generated)))
    refs: list[Problem] = []
    while len(refs) < n:
        deck = list(reference)
        rng.shuffle(deck)
        refs += deck
    return [(generated[i], refs[k]) for k, i in enumerate(chosen)]


def _problem(d: dict[str, Any]) -> Problem:
    return Problem(**{k: v for k, v in d.items() if k in Problem.__dataclass_fields__})


class WinRateOptions(TaskOptions):
    """Options of ``datagen_winrate``."""

    data: str | None = PathField(None, description="Generated problems.")
    reference: str | None = PathField(None, description="Real problems to compare with.")
    seed: int | None = Field(None, description="Pairing seed (recorded).")
    n_comparisons: int | None = Field(None, description="Pairs to judge.")
    generator_model: str | None = Field(None, description="The model that generated the data.")
    include_solutions: bool | None = Field(None, description="Show solutions to the judge.")
    max_tokens: int | None = Field(None, description="Max tokens per verdict.")
    judge_model: JudgeModels = Field([], description="The judge model; repeat for a jury "
                                     "(default: the run's model).")
    judge_base_url: RoleURL = Field(None, description="The judge's endpoint (default: ASSAY_JUDGE_BASE_URL, "
                                   "else OPENAI_BASE_URL; never --base-url unless the "
                                   "judge is the model under test).")
    judge_samples: int = Field(1, ge=1, le=15, description="Verdicts asked per judge and "
                               "order (more than one: sampled at temperature 0.7).")


@task("datagen_winrate")
class WinRateTask(Task):
    """Pairwise win rate of generated problems against real ones (judged by
    the judge_model option or the run's model).

    ``include_solutions`` is off by default: reference sets often lack solutions (unblinding)."""

    description = ("Pairwise win rate of generated vs real problems, blinded and judged in both "
                   "orders; position flips count as ties and are reported.")
    headline_metric = "win_rate_adjusted"
    info = TaskInfo(plannable=False, runs_here="assay.tasks.datagen:runs_in_a_plan",
                    measures=(Measure(capability="data_quality", standing="canonical",
                                      why=("the pairwise win rate against real problems, judged in both "
                                           "orders, is the comparative measure of generated data")),),
                    roles=("judge",), tags=("datagen", "judge"))
    Options = WinRateOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        self.opts: WinRateOptions = WinRateOptions.model_validate(self.options)
        check_number("--seed", self.opts.seed, integer=True)
        check_number("--n-comparisons", self.opts.n_comparisons, minimum=1, integer=True)
        if not self.opts.data:
            raise ConfigError("datagen_winrate needs the generated problems: data=FILE")
        if not self.opts.reference:
            raise ConfigError("datagen_winrate needs real problems to compare with: "
                              "reference=FILE")
        self.seed = int(self.opts.seed or 0)

    def read(self) -> LoadedData:
        gen = load_problems(self.opts.data)
        ref = load_problems(self.opts.reference)
        n_req = self.opts.n_comparisons
        pairs = seeded_pairs(gen, ref, seed=self.seed, n=int(n_req) if n_req else None)
        generators = sorted({str(p.provenance.get("model")) for p in gen
                             if p.provenance.get("model")})
        generator = self.opts.generator_model or (generators[0] if len(generators) == 1 else None)
        samples = []
        for i, (g, r) in enumerate(pairs):
            sid = f"{g.problem_id}~{r.problem_id}"
            samples.append(Sample(
                id=sid, input=g.problem, target=r.problem_id,
                metadata={"pair_index": i, "generated_id": g.problem_id,
                          "reference_id": r.problem_id, "reference_source": r.source,
                          "seed": self.seed, "generator_model": generator},
                row={"generated": g.to_dict(), "reference": r.to_dict()},
            ))
        pairing = [[g.problem_id, r.problem_id] for g, r in pairs]
        info = {
            "data": str(self.opts.data), "reference": str(self.opts.reference),
            "generated": len(gen), "references": len(ref), "pairs": len(pairs),
            "n_comparisons_requested": int(n_req) if n_req else None,
            "seed": self.seed, "pairing": pairing,
            "include_solutions": bool(self.opts.include_solutions),
            "generator_model": generator, "prompt_version": PROMPT_VERSION,
            "content_hash": hashlib.sha256(json.dumps(
                [PROMPT_VERSION, [[g.to_dict(), r.to_dict()] for g, r in pairs],
                 bool(self.opts.include_solutions)],
                sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest(),
        }
        return LoadedData(samples, info, dict(self.options))

    def roles(self, model: str) -> dict[str, RoleModel]:
        """The judges of ``judge_model`` (a jury); without one, the run's model judges."""
        return jury(self.opts.judge_model or [model], self.opts.judge_base_url)

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        return {"max_tokens": self.opts.max_tokens or 512, "temperature": 0.0, **run_params_of(ctx)}

    def order_messages(self, sample: Sample, order: str) -> list[Message]:
        """The blinded prompt for one order (A: generated first; B: reference first)."""
        row = sample.row or {}
        g, r = _problem(row["generated"]), _problem(row["reference"])
        sol = bool(self.opts.include_solutions)
        first, second = (g, r) if order == "A" else (r, g)
        user = PAIR_TEMPLATE.format(example=WINNER_EXAMPLE,
                                    first=render_problem(first, include_solution=sol),
                                    second=render_problem(second, include_solution=sol))
        return [Message("system", PAIR_SYSTEM), Message("user", user)]

    async def _judge(self, jury: list[Any], messages: list[Message],
                     params: dict[str, Any]) -> dict[str, Any]:
        """One order's verdict: every judge's votes, the majority (a split: ``tie``)."""
        schema = winner_schema(rationale_limit(params.get("max_tokens"), cap=300, room=100))
        votes = await poll(jury, messages, check_winner,
                           retry=lambda why: RETRY_TEMPLATE.format(why=why, example=WINNER_EXAMPLE),
                           schema=schema, params=params, samples=self.opts.judge_samples,
                           seed=params.get("seed"))
        verdict = combine_votes([None if v.invalid else v.value["winner"] for v in votes],
                                tie="tie")
        reason = next((v.value["reason"] for v in votes
                       if not v.invalid and v.value["winner"] == verdict.value), None)
        out = {"winner": verdict.value, "reason": reason, "invalid": verdict.invalid,
               "attempts": max(v.attempts for v in votes),
               "reasons": [r for v in votes for r in v.refused],
               "raw": votes[-1].replies[-1][:RAW_LIMIT]}
        if len(votes) > 1:
            out.update(agreement=verdict.agreement, votes=[
                {"judge": v.judge, "winner": None if v.invalid else v.value["winner"],
                 "attempts": v.attempts} for v in votes])
        return out

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """Nothing to ask the run's model: the pair is the sample's (``score`` judges)."""
        return Outcome(output=str(sample.id))

    async def score(self, sample: Sample, outcome: Outcome, ctx: Any) -> list[Score]:
        """Both orders judged by the jury, then the pair's outcome."""
        jury = jury_of(ctx)
        params = self.generation_params(ctx)
        judgments = {}
        for order in ORDERS:
            j = await self._judge(jury, self.order_messages(sample, order), params)
            j["order"] = order
            j["first"] = "generated" if order == "A" else "reference"
            j["preferred"] = preferred_item(order, j["winner"])
            judgments[order] = j
        judges = [c.model_id for c in jury]
        return self.pair_scores(sample, judgments, judges)

    @staticmethod
    def pair_scores(sample: Sample, js: dict[str, Any], judges: list[str]) -> list[Score]:
        """The pair's outcome from its two orders' verdicts (rules in the module docstring)."""
        prefs = [preferred_item(o, (js.get(o) or {}).get("winner")) for o in ORDERS]
        c = combine(*prefs)
        generator = sample.metadata.get("generator_model")
        meta = {**c, "judgments": js, "judge_model": judges[0], "generator_model": generator,
                "generated_id": sample.metadata.get("generated_id"),
                "reference_id": sample.metadata.get("reference_id"),
                "invalid": c["outcome"] == "invalid"}
        if len(judges) > 1:
            meta["judge_models"] = judges
        if c["outcome"] == "invalid":
            bad = [o for o, p in zip(ORDERS, prefs, strict=True) if p is None]
            why = "; ".join(f"order {o}: " + "; ".join(js.get(o, {}).get("reasons") or [])
                            for o in bad)
            return [Score(SCORE_NAME, None, None, f"invalid pair ({why})", meta)]
        expl = (f"order A (generated first): {js['A']['winner']}; order B (reference first): "
                f"{js['B']['winner']}")
        if c["inconsistent"]:
            expl += " -> position flip, counted as a tie"
        return [Score(SCORE_NAME, VALUES[c["outcome"]], c["outcome"], expl, meta)]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        return winrate_metrics(results, options or {})

    @classmethod
    def report_extra(cls, metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
        return winrate_report_extra(metrics)
