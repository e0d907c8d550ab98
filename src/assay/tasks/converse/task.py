"""``converse``: an examiner model talks to the agent; a judge grades weighted points.

``solve`` stores the conversation (and a bounded copy of the folder), so ``assay score RUN``
judges again without the agent or the examiner.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

from assay.core.paths import copy_inside
from assay.core.redact import redact_value
from assay.core.types import Outcome, Sample, SampleResult, Score
from assay.errors import ConfigError
from assay.models.registry import capabilities_of
from assay.sandbox import bwrap_problem, check_isolation, describe_isolation, scratch_folder
from assay.scoring.judge import JudgeModels, RoleURL, jury_of
from assay.tasks.base import LoadedData, RoleModel, Task, jury, run_params_of
from assay.tasks.capabilities import Measure
from assay.tasks.converse import examiner as examiner_mod
from assay.tasks.converse import judge as judge_mod
from assay.tasks.converse import workfiles
from assay.tasks.converse.agents import prepare_agent
from assay.tasks.converse.cases import Case, case_hash, data_file, load_cases, unmet_dependencies
from assay.tasks.converse.loop import Workspace, converse
from assay.tasks.converse.metrics import converse_metrics
from assay.tasks.converse.report import converse_report
from assay.tasks.converse.scoring import case_scores, judge_points, usage_of
from assay.tasks.info import TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import task

BUILTIN_CASES = Path(__file__).parent / "cases"
#: what a local (4,096-token) examiner sees of the conversation, and a local agent's replies
LOCAL_EXAMINER_CONTEXT = 5000
LOCAL_AGENT_TOKENS = 128


class ConverseOptions(TaskOptions):
    """Options of ``converse``."""

    cases: str | None = PathField(None, description="A case YAML file or a folder of them "
                              "(default: the built-in cases).")
    examiner_model: str = Field("local", description="The examiner model (plays the user).")
    judge_model: JudgeModels = Field(["local"], min_length=1, description="The judge "
                                     "model (grades the LLM points); repeat for a jury.")
    examiner_base_url: RoleURL = Field(None, description="The examiner's endpoint (default: "
                                       "ASSAY_EXAMINER_BASE_URL, else OPENAI_BASE_URL).")
    judge_base_url: RoleURL = Field(None, description="The judge's endpoint (default: ASSAY_JUDGE_BASE_URL, "
                                   "else OPENAI_BASE_URL; never --base-url unless the "
                                   "judge is the model under test).")
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


def _copy_data(case: Case, case_dir: Path, workdir: Path) -> None:
    """The case's data files into the agent's folder, each checked again as it is copied."""
    for name in case.data_files:
        copy_inside(case_dir, name, workdir / Path(name).name, what=f"{case_dir}: data_files")


@task("converse")
class ConverseTask(Task):
    """Multi-turn conversations: examiner, agent, judge; eval_code in a sandbox."""

    description = ("Multi-turn conversations (TaskWeaver-style cases; 17 built in): an "
                   "examiner model talks to the agent following a task description for up to "
                   "max_rounds; a judge grades each weighted scoring point (LLM, or eval_code "
                   "checking files in a sandbox).")
    headline_metric = "score"
    info = TaskInfo(category="dialogue", agent=True, roles=("examiner", "judge"),
                    tags=("multi-turn", "conversation", "agent", "examiner", "judge", "tools",
                          "files", "dialogue"),
                    aliases=("conversation", "examiner", "taskweaver"),
                    measures=(
                        Measure(capability="agent", standing="niche",
                                why="assay's own TaskWeaver-style cases: an examiner "
                                    "drives a multi-turn task, a judge grades its points"),
                        Measure(capability="chat", standing="niche",
                                why="multi-turn conversations graded by a judge, but "
                                    "task-oriented cases, not open-ended chat quality")))
    Options = ConverseOptions

    def __init__(self, **options: Any) -> None:
        if options.get("cases"):  # stored absolute, so --resume works from any folder
            options["cases"] = str(Path(options["cases"]).expanduser().resolve())
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        #: the options as a model (they may come from a stored run: validated again)
        self.opts: ConverseOptions = ConverseOptions.model_validate(self.options)

    def read(self) -> LoadedData:
        target = Path(self.opts.cases or BUILTIN_CASES).expanduser()
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
        info = {
            "source": str(target.resolve()) if target != BUILTIN_CASES else "built-in cases",
            "cases": len(samples),
            "content_hash": hashlib.sha256("".join(
                [examiner_mod.PROMPT_VERSION, judge_mod.PROMPT_VERSION, *hashes]).encode()
            ).hexdigest(),
            "sandbox": describe_isolation() if needs_code else None,
        }
        return LoadedData(samples, info, dict(self.options))

    def roles(self, model: str) -> dict[str, RoleModel]:
        """The examiner and the judge (or jury); warns when one is the agent under test."""
        o = self.opts
        for role, spec in (("examiner", o.examiner_model), *(("judge", m) for m in o.judge_model)):
            if spec == model:
                print(f"warning: the {role} model is the agent under test "
                      f"({redact_value('model', model)}); give "
                      f"another with --{role}-model", file=sys.stderr)
        if o.examiner_model in o.judge_model:
            print("warning: the examiner and the judge are the same model "
                  f"({redact_value('model', o.examiner_model)})",
                  file=sys.stderr)
        return {"examiner": RoleModel(o.examiner_model, o.examiner_base_url),
                **jury(o.judge_model, o.judge_base_url)}

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        """512 tokens unless told (128 for a local model, whose context holds the whole
        conversation); the run's parameters win."""
        local = ctx is not None and capabilities_of(ctx).small_context
        default = LOCAL_AGENT_TOKENS if local else 512
        return {"max_tokens": self.opts.max_tokens or default, **run_params_of(ctx)}

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """Converse; the outcome keeps what scoring needs (for ``eval_code``, the folder)."""
        case = Case.model_validate(sample.metadata["case"])
        unmet = unmet_dependencies(case)
        if unmet:
            return Outcome(error=f"case {sample.id}: unmet dependencies: {', '.join(unmet)}")
        examiner = agent.roles["examiner"]
        o = self.opts
        case_dir = Path(sample.metadata["case_file"]).parent
        # removed whatever the agent left in it (1,500 folders deep, modes 000, ...)
        with scratch_folder(prefix="assay-converse-") as tmp:
            workdir = Path(tmp) / "work"
            workdir.mkdir()
            _copy_data(case, case_dir, workdir)
            prepare_agent(agent, case=case, workdir=workdir)
            local_examiner = capabilities_of(examiner).small_context
            temperature = o.examiner_temperature
            if temperature is None:  # a small local model keeps to JSON when greedy
                temperature = 0.0 if local_examiner else 0.7
            ex_params: dict[str, Any] = {"temperature": temperature, "max_tokens": 400}
            if "seed" in run_params_of(agent):
                ex_params["seed"] = run_params_of(agent)["seed"]
            conv, transcript = await converse(
                task_description=case.task_description, max_rounds=case.max_rounds,
                agent=agent, examiner=examiner,
                workspace=Workspace(workdir) if case.has_workspace else None,
                verbose=case.verbose,
                agent_params=self.generation_params(agent),
                examiner_params=ex_params, agent_system_prompt=o.agent_system_prompt,
                examiner_context_chars=LOCAL_EXAMINER_CONTEXT if local_examiner else None)
            folder = Workspace(workdir)
            files = folder.snapshot()
            kept = (workfiles.snapshot(folder.root, folder.files())
                    if any(p.eval_code for p in case.scoring_points) else None)
        replies = [m["content"] for m in conv.chat if m["role"] == "agent"]
        meta: dict[str, Any] = {
            "conversation": conv.to_dict(), "files": files,
            "agent_model": getattr(agent, "model_id", None),
            "examiner_model": examiner.model_id,
            "usage": {"agent": usage_of(agent), "examiner": usage_of(examiner)}}
        if kept is not None:
            meta["workdir"] = kept
        return Outcome(transcript=transcript, output=replies[-1] if replies else "", metadata=meta)

    async def score(self, sample: Sample, outcome: Outcome, ctx: Any) -> list[Score]:
        """Judge every point (:mod:`assay.tasks.converse.scoring`), then Σ weights hit / Σ weights
        judged; invalid points are counted apart, never scored."""
        case = Case.model_validate(sample.metadata["case"])
        jury = jury_of(ctx)
        verdicts = await judge_points(case, outcome.metadata, jury, self.opts,
                                      run_params_of(ctx).get("seed"))
        info: dict[str, Any] = {"judge_model": None, "judge_usage": None}
        if jury:
            # the sample's own judge contexts: all of their usage is this scoring's
            used = [usage_of(j) for j in jury]
            info = {"judge_model": jury[0].model_id,
                    "judge_usage": {k: sum(u[k] for u in used) for k in used[0]}}
            if len(jury) > 1:
                info["judge_models"] = [j.model_id for j in jury]
        conv = outcome.metadata.get("conversation") or {}
        return case_scores(case, verdicts, conv, self.opts.threshold, info)

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        return converse_metrics(results, options or {})

    @classmethod
    def report_extra(cls, metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
        return converse_report(metrics, results)
