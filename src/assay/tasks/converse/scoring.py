"""Scoring one ``converse`` outcome: every scoring point judged, then the case's score.

Older runs' stored ``eval_code`` verdicts are kept as they were.
"""

from __future__ import annotations

import asyncio
from typing import Any

from assay.core.types import Score
from assay.errors import ConfigError
from assay.metrics.format import counted
from assay.models.registry import capabilities_of
from assay.sandbox import Limits
from assay.scoring.judge import Vote, poll
from assay.tasks.converse import judge as judge_mod
from assay.tasks.converse.cases import Case
from assay.tasks.converse.evalcode import run_eval_code
from assay.tasks.converse.workfiles import files_of, legacy_files

LOCAL_JUDGE_CONTEXT = 6000
REMOTE_JUDGE_CONTEXT = 48000


def usage_of(ctx: Any) -> dict[str, Any]:
    """A model context's tallies so far (tokens, calls, cache hits)."""
    return {"input_tokens": ctx.usage.input_tokens, "output_tokens": ctx.usage.output_tokens,
            "calls": ctx.calls, "cache_hits": ctx.cache_hits}


def vote_row(vote: Vote, jury: bool) -> dict[str, Any]:
    """One judge vote as the point's verdict keeps it (its judge's model with a jury)."""
    row: dict[str, Any] = {"is_hit": None if vote.invalid else vote.value.is_hit,
                           "reason": "; ".join(vote.refused) if vote.invalid
                           else vote.value.reason, "invalid": vote.invalid,
                           "attempts": vote.attempts}
    if vote.invalid:
        row["raw"] = vote.replies[-1][:1000]
    if jury:
        row["judge"] = vote.judge
    return row


async def judge_points(case: Case, meta: dict[str, Any], jury: list[Any], opts: Any,
                       seed: Any) -> list[dict[str, Any]]:
    """Every scoring point's verdict, in the case's order; every judge of ``jury`` votes and the
    pooled majority decides."""
    conv = meta.get("conversation")
    if not isinstance(conv, dict):
        raise ValueError("the outcome holds no conversation to judge")
    history = [{"role": m["role"], "content": m["content"]} for m in conv.get("chat") or []]
    text = ""
    if any(not p.eval_code for p in case.scoring_points):
        if not jury:
            raise ConfigError("converse judges its LLM points with a judge model, and the "
                              "scoring context has none (give --judge-model)")
        limit = opts.judge_context_chars or (
            LOCAL_JUDGE_CONTEXT if any(capabilities_of(j).small_context for j in jury)
            else REMOTE_JUDGE_CONTEXT)
        text = judge_mod.transcript_text(history, limit)
    stored = meta.get("workdir")
    legacy = meta.get("points") if stored is None else None
    if not isinstance(legacy, list) or len(legacy) != len(case.scoring_points):
        legacy = None
    files = files_of(stored) if stored is not None else legacy_files(meta.get("files"))
    # the CPU limit lies past the wall-clock one: a busy loop ends as a "timeout"
    limits = Limits(timeout_s=opts.eval_timeout, cpu_s=int(opts.eval_timeout) + 5)

    async def one(i: int, point: Any) -> dict[str, Any]:
        if point.eval_code:
            if legacy is not None and legacy[i].get("kind") == "code":
                return {**legacy[i], "stored_verdict": True}  # the folder was not kept
            return await run_eval_code(point.eval_code, history, None, files=files,
                                       limits=limits, require=opts.require_sandbox)
        msgs = judge_mod.judge_messages(case.task_description, text, point.score_point)
        votes = await poll(jury, msgs, judge_mod.parse_verdict, retry=judge_mod.RETRY,
                           schema=judge_mod.JUDGE_SCHEMA,
                           params={"max_tokens": 400, "temperature": 0.0},
                           samples=opts.judge_samples, seed=seed)
        return judge_mod.majority([vote_row(v, len(jury) > 1) for v in votes])

    return list(await asyncio.gather(*(one(i, p) for i, p in enumerate(case.scoring_points))))


def case_scores(case: Case, verdicts: list[dict[str, Any]], conv: dict[str, Any],
                threshold: float, judge: dict[str, Any]) -> list[Score]:
    """``score`` (Σ weights hit / Σ weights judged; invalid points apart, never scored) and
    ``passed``; the metadata keeps every verdict whole."""
    if len(verdicts) != len(case.scoring_points):
        raise ValueError(f"{len(verdicts)} verdicts for {len(case.scoring_points)} "
                         "scoring points")
    hit_w = judged_w = 0.0
    rows = []
    for p, v in zip(case.scoring_points, verdicts, strict=True):
        invalid = bool(v.get("invalid"))
        if not invalid:
            judged_w += p.weight
            hit_w += p.weight if v.get("is_hit") else 0.0
        rows.append({"point": p.score_point, "weight": p.weight, "kind": v.get("kind"),
                     "is_hit": None if invalid else bool(v.get("is_hit")),
                     "invalid": invalid, "reason": str(v.get("reason") or "")[:1000],
                     "agreement": v.get("agreement")})
    n_invalid = sum(1 for r in rows if r["invalid"])
    meta = {"points": rows, "invalid_points": n_invalid, "rounds": conv.get("rounds"),
            "ended_by": conv.get("ended_by"), "weight_total": sum(
                p.weight for p in case.scoring_points), "weight_judged": judged_w,
            "verdicts": verdicts, **judge}
    if judged_w == 0:
        return [Score("score", None, None, "every verdict is invalid", meta),
                Score("passed", None, None, "every verdict is invalid")]
    value = hit_w / judged_w
    why = f"{hit_w:g}/{judged_w:g} of the weight hit"
    if n_invalid:
        why += f"; {counted(n_invalid, 'invalid verdict')} left out"
    return [Score("score", value, f"{hit_w:g}/{judged_w:g}", why, meta),
            Score("passed", 1.0 if value >= threshold - 1e-12 else 0.0, None,
                  f"score {value:.3f} vs threshold {threshold:g}")]
