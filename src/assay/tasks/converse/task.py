"""``converse``: an examiner model talks to the agent; a judge grades weighted points.

``assay run converse --cases DIR_OR_FILE --model AGENT --examiner-model SPEC
--judge-model SPEC [--epochs K]``: one sample per case file (see
:mod:`assay.tasks.converse.cases`); per case and epoch a fresh agent, a fresh working
folder holding the case's data files, a conversation of at most ``max_rounds`` agent
turns (:mod:`assay.tasks.converse.loop`), then every scoring point judged: by its
``eval_code`` in the sandbox (:mod:`assay.tasks.converse.evalcode`) or by the judge model
(:mod:`assay.tasks.converse.judge`). The conversation, the agent's transcript, the files
it left and every point's verdict and reason are stored with the outcome, so ``assay
score RUN`` scores a run again (another ``-T threshold=``) with no model call.
Metrics: :mod:`assay.tasks.converse.metrics`.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from pathlib import Path
from typing import Any

from pydantic import field_validator

from assay.core.paths import copy_inside
from assay.core.redact import redact_value
from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.errors import ConfigError
from assay.sandbox import (
    Limits,
    bwrap_problem,
    check_isolation,
    describe_isolation,
    scratch_folder,
)
from assay.tasks.base import RoleModel, Task
from assay.tasks.converse import examiner as examiner_mod
from assay.tasks.converse import judge as judge_mod
from assay.tasks.converse.agents import prepare_agent
from assay.tasks.converse.cases import (
    Case,
    case_hash,
    data_file,
    load_cases,
    unmet_dependencies,
)
from assay.tasks.converse.evalcode import run_eval_code
from assay.tasks.converse.loop import Workspace, converse
from assay.tasks.converse.replies import ask_with_retry
from assay.tasks.options import Field, TaskOptions
from assay.tasks.registry import task

BUILTIN_CASES = Path(__file__).parent / "cases"
LOCAL_JUDGE_CONTEXT = 6000
REMOTE_JUDGE_CONTEXT = 48000
#: what a local (4,096-token) examiner sees of the conversation, and a local agent's replies
LOCAL_EXAMINER_CONTEXT = 5000
LOCAL_AGENT_TOKENS = 128


class ConverseOptions(TaskOptions):
    """Options of ``converse``."""

    cases: str | None = Field(None, description="A case YAML file or a folder of them "
                              "(default: the built-in cases).")
    examiner_model: str = Field("local", description="The examiner model (plays the user).")
    judge_model: str = Field("local", description="The judge model (grades the LLM points).")
    examiner_base_url: str | None = Field(None, description="The examiner's endpoint "
                                          "(default: --base-url).")
    judge_base_url: str | None = Field(None, description="The judge's endpoint "
                                       "(default: --base-url).")
    judge_samples: int = Field(1, ge=1, le=15, description="Judge each LLM point N times; "
                               "the majority decides (agreement reported).")
    threshold: float = Field(1.0, ge=0, le=1, description="A case passes when its score "
                             "is at least this (pass^k uses it).")
    require_sandbox: bool = Field(False, description="Refuse to run eval_code without "
                                  "bubblewrap (no weak isolation).")
    eval_timeout: float = Field(30.0, gt=0, le=600, description="Seconds one eval_code "
                                "snippet may run.")
    examiner_temperature: float | None = Field(None, ge=0, le=2, description="The "
                                               "examiner's temperature (default 0.7 so trials "
                                               "differ across epochs; 0 for a local model).")
    judge_context_chars: int | None = Field(None, ge=500, description="Characters of the "
                                            "conversation the judge sees (default: 6000 "
                                            "for local, 48000 otherwise).")
    agent_system_prompt: str | None = Field(None, description="System message for a model "
                                            "agent (default: a neutral one).")
    max_tokens: int | None = Field(None, ge=1, description="Max tokens per agent reply "
                                   "(default 512; 128 for a local model).")

    @field_validator("examiner_base_url", "judge_base_url")
    @classmethod
    def _no_credentials(cls, v: str | None) -> str | None:
        if v and "@" in v.split("//", 1)[-1].split("/", 1)[0]:
            raise ValueError("put credentials in OPENAI_API_KEY, not in the URL (a run keeps "
                             "its URLs, never the secrets in them)")
        return v


def _copy_data(case: Case, case_dir: Path, workdir: Path) -> None:
    """The case's data files into the agent's folder, each checked again as it is copied
    (inside the case's folder, links included: see :func:`assay.core.paths.copy_inside`)."""
    for name in case.data_files:
        copy_inside(case_dir, name, workdir / Path(name).name,
                    what=f"{case_dir}: data_files")


def _usage(ctx: Any) -> dict[str, Any]:
    return {"input_tokens": ctx.usage.input_tokens, "output_tokens": ctx.usage.output_tokens,
            "calls": ctx.calls, "cache_hits": ctx.cache_hits}


@task("converse")
class ConverseTask(Task):
    """Multi-turn conversations: examiner, agent, judge; eval_code in a sandbox."""

    description = ("Conversations: an examiner model talks to the agent for up to max_rounds; "
                   "a judge grades weighted scoring points (LLM, or eval_code in a sandbox).")
    headline_metric = "score"
    Options = ConverseOptions

    def __init__(self, **options: Any) -> None:
        if options.get("cases"):  # stored absolute, so --resume works from any folder
            options["cases"] = str(Path(options["cases"]).expanduser().resolve())
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        #: the options as a model (they may come from a stored run: validated again)
        self.opts = ConverseOptions.model_validate(self.options)
        self._samples: list[Sample] | None = None
        self._info: dict[str, Any] = {}

    # -- data -----------------------------------------------------------------------------
    def samples(self) -> list[Sample]:
        """One sample per case file, in path order."""
        if self._samples is not None:
            return self._samples
        target = Path(self.options.get("cases") or BUILTIN_CASES).expanduser()
        loaded = load_cases(target)
        needs_code = any(p.eval_code for case, _, _ in loaded for p in case.scoring_points)
        problem = bwrap_problem() if needs_code else None
        if problem and self.opts.require_sandbox:
            raise ConfigError(f"--require-sandbox: the cases have eval_code and {problem}")
        if needs_code:  # refused here, before any model call, unless --allow-weak-sandbox
            check_isolation("the cases' eval_code")
        samples = []
        hashes = []
        for case, cid, path in loaded:
            samples.append(Sample(
                id=cid, input=case.task_description,
                files=[str(data_file(path, f)) for f in case.data_files] or None,
                metadata={"case": case.model_dump(mode="json"), "case_file": str(path.resolve()),
                          "max_rounds": case.max_rounds, "tags": case.tags}))
            hashes.append(case_hash(case, path))
        self._info = {
            "source": str(target.resolve()) if target != BUILTIN_CASES else "built-in cases",
            "cases": len(samples),
            "content_hash": hashlib.sha256("".join(
                [examiner_mod.PROMPT_VERSION, judge_mod.PROMPT_VERSION, *hashes]).encode()
            ).hexdigest(),
            "sandbox": describe_isolation() if needs_code else None,
        }
        self._samples = samples
        return samples

    def roles(self, model: str) -> dict[str, RoleModel]:
        """The examiner and the judge; a warning when either is the agent under test."""
        o = self.opts
        for role, spec in (("examiner", o.examiner_model), ("judge", o.judge_model)):
            if spec == model:
                print(f"warning: the {role} model is the agent under test "
                      f"({redact_value('model', model)}); give "
                      f"another with --{role}-model", file=sys.stderr)
        if o.examiner_model == o.judge_model:
            print("warning: the examiner and the judge are the same model "
                  f"({redact_value('model', o.judge_model)})",
                  file=sys.stderr)
        return {"examiner": RoleModel(o.examiner_model, o.examiner_base_url),
                "judge": RoleModel(o.judge_model, o.judge_base_url)}

    # -- driving ----------------------------------------------------------------------------
    def generation_params(self, local: bool = False) -> dict[str, Any]:
        """The agent's generation parameters: 512 tokens unless told (128 for a local
        model, whose context holds the whole conversation); run params win."""
        default = LOCAL_AGENT_TOKENS if local else 512
        return {"max_tokens": int(self.options.get("max_tokens") or default), **self.run_params}

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """Converse, then judge every point; everything lands in the outcome's metadata."""
        case = Case.model_validate(sample.metadata["case"])
        unmet = unmet_dependencies(case)
        if unmet:
            return Outcome(error=f"case {sample.id}: unmet dependencies: {', '.join(unmet)}")
        examiner, judge = agent.roles["examiner"], agent.roles["judge"]
        o = self.opts
        case_dir = Path(sample.metadata["case_file"]).parent
        # removed whatever the agent left in it (1,500 folders deep, modes 000, ...)
        with scratch_folder(prefix="assay-converse-") as tmp:
            workdir = Path(tmp) / "work"
            workdir.mkdir()
            _copy_data(case, case_dir, workdir)
            prepare_agent(agent, case=case, workdir=workdir)
            local_examiner = examiner.model_id.startswith("local")
            temperature = o.examiner_temperature
            if temperature is None:  # a small local model keeps to JSON when greedy
                temperature = 0.0 if local_examiner else 0.7
            ex_params: dict[str, Any] = {"temperature": temperature, "max_tokens": 400}
            if "seed" in self.run_params:
                ex_params["seed"] = self.run_params["seed"]
            conv, transcript = await converse(
                task_description=case.task_description, max_rounds=case.max_rounds,
                agent=agent, examiner=examiner,
                workspace=Workspace(workdir) if case.has_workspace else None,
                verbose=case.verbose,
                agent_params=self.generation_params(str(agent.model_id).startswith("local")),
                examiner_params=ex_params, agent_system_prompt=o.agent_system_prompt,
                examiner_context_chars=LOCAL_EXAMINER_CONTEXT if local_examiner else None)
            points = await self._judge_points(case, conv.chat, judge, workdir)
            files = Workspace(workdir).snapshot()
        replies = [m["content"] for m in conv.chat if m["role"] == "agent"]
        return Outcome(
            transcript=transcript, output=replies[-1] if replies else "",
            metadata={"conversation": conv.to_dict(), "points": points, "files": files,
                      "agent_model": getattr(agent, "model_id", None),
                      "examiner_model": examiner.model_id, "judge_model": judge.model_id,
                      "usage": {"agent": _usage(agent), "examiner": _usage(examiner),
                                "judge": _usage(judge)}})

    async def _judge_points(self, case: Case, chat: list[dict[str, Any]], judge: Any,
                            workdir: Path) -> list[dict[str, Any]]:
        o = self.opts
        history = [{"role": m["role"], "content": m["content"]} for m in chat]
        limit = o.judge_context_chars or (
            LOCAL_JUDGE_CONTEXT if judge.model_id.startswith("local") else REMOTE_JUDGE_CONTEXT)
        text = judge_mod.transcript_text(history, limit)
        # the CPU limit lies past the wall-clock one: a busy loop ends as a "timeout"
        limits = Limits(timeout_s=o.eval_timeout, cpu_s=int(o.eval_timeout) + 5)

        async def one(point: Any) -> dict[str, Any]:
            if point.eval_code:
                return await run_eval_code(point.eval_code, history, workdir, limits=limits,
                                           require=o.require_sandbox)
            msgs = judge_mod.judge_messages(case.task_description, text, point.score_point)
            votes = [await self._vote(judge, msgs, i) for i in range(o.judge_samples)]
            return judge_mod.majority(votes)

        return list(await asyncio.gather(*(one(p) for p in case.scoring_points)))

    async def _vote(self, judge: Any, msgs: list[Message], i: int) -> dict[str, Any]:
        """One judge verdict, with one corrective retry; ``invalid`` after two failures."""
        n = self.opts.judge_samples
        params: dict[str, Any] = {"max_tokens": 400, "temperature": 0.0 if n == 1 else 0.7}
        if n > 1:
            params["seed"] = int(self.run_params.get("seed") or 0) + i
        asked = await ask_with_retry(judge, msgs, judge_mod.JUDGE_SCHEMA,
                                     judge_mod.parse_verdict, judge_mod.RETRY, params)
        if asked.value is not None:
            return {"is_hit": asked.value.is_hit, "reason": asked.value.reason,
                    "invalid": False, "attempts": asked.attempts}
        return {"is_hit": None, "invalid": True, "attempts": asked.attempts,
                "reason": "; ".join(asked.refused), "raw": asked.raw[:1000]}

    # -- scoring ----------------------------------------------------------------------------
    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        """Σ weights hit / Σ weights judged; invalid points are counted apart, never scored."""
        case = Case.model_validate(sample.metadata["case"])
        points = outcome.metadata.get("points") or []
        if len(points) != len(case.scoring_points):
            raise ValueError(f"the outcome holds {len(points)} verdicts for "
                             f"{len(case.scoring_points)} scoring points")
        conv = outcome.metadata.get("conversation") or {}
        hit_w = judged_w = 0.0
        rows = []
        for p, v in zip(case.scoring_points, points, strict=True):
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
                    p.weight for p in case.scoring_points), "weight_judged": judged_w}
        if judged_w == 0:
            return [Score("score", None, None, "every verdict is invalid", meta),
                    Score("passed", None, None, "every verdict is invalid")]
        value = hit_w / judged_w
        why = f"{hit_w:g}/{judged_w:g} of the weight hit"
        if n_invalid:
            why += f"; {n_invalid} invalid verdict(s) left out"
        threshold = self.opts.threshold
        return [Score("score", value, f"{hit_w:g}/{judged_w:g}", why, meta),
                Score("passed", 1.0 if value >= threshold - 1e-12 else 0.0, None,
                      f"score {value:.3f} vs threshold {threshold:g}")]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        """See :func:`assay.tasks.converse.metrics.converse_metrics`."""
        from assay.tasks.converse.metrics import converse_metrics

        return converse_metrics(results, options or {})

    @classmethod
    def report_extra(cls, metrics: dict[str, Any],
                     results: list[SampleResult]) -> dict[str, Any]:
        """Cases by score, point hit rates, and every conversation drawn as a chat."""
        from assay.tasks.converse.report import converse_report

        return converse_report(metrics, results)
