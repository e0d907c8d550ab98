"""τ²-bench's official code, run as shipped in a worker process (:mod:`assay.core.workers`).

The worker imports the ``tau2`` package from the unpacked wheel with assay's litellm bridge
first on its path (``bridge/litellm``: each model call the official code makes is asked of
the run). :func:`simulate` is the official per-task runner (``tau2.run.run_task``: a fresh
environment, the official LLM agent and user simulator, the orchestrator and its limits);
:func:`evaluate` is ``evaluate_simulation`` on a stored simulation. Values cross as JSON-ready
dicts (the official pydantic models' dumps).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.core import workers
from assay.core.workers import WorkerError, WorkerTimeout

#: what ``ps`` shows for a worker
PROCESS_NAME = "assay-tau2"
#: the folder holding assay's ``litellm`` bridge package
BRIDGE = str(Path(__file__).parent / "bridge")
#: the model names the official agent and user simulator are given (the bridge's roles)
AGENT_LLM = "assay-agent"
USER_LLM = "assay-user"
#: how many differing database paths a failed DB check shows
DIFF_MAX = 40


class Tau2Error(WorkerError):
    """τ²-bench's official code could not be run to its end (its worker died)."""


class Tau2Timeout(Tau2Error, WorkerTimeout):
    """τ²-bench's official code ran past its deadline; its worker was killed."""


class Tau2Worker(workers.Worker):
    """A process running τ²-bench's official code."""

    boot = __name__
    label = "τ²-bench"
    error = Tau2Error
    timeout_error = Tau2Timeout


@functools.cache
def kind_for(root: Path) -> type[Tau2Worker]:
    """The worker kind for the package at ``root``: a worker imports one ``tau2`` for its
    life, so the pool never lends a worker of one root to a request for another."""
    return type("Tau2Worker", (Tau2Worker,), {"root": str(root)})


def serve(fd: int) -> None:
    workers.serve(fd, name=PROCESS_NAME)


def setup(root: Path) -> dict[str, Any]:
    """What a worker needs: the folder holding ``tau2`` (sent with every request)."""
    return {"root": str(root)}


def _load(spec: dict[str, Any]) -> Any:
    """In a worker: the bridge and ``spec``'s package on the path (once), the official
    logging quiet (errors come back as exceptions); returns ``tau2.run``."""
    if sys.path[:2] != [BRIDGE, spec["root"]]:
        if "tau2" in sys.modules and sys.path[1:2] != [spec["root"]]:
            raise Tau2Error("this worker has another τ²-bench loaded")  # never reused so
        sys.path[:0] = [BRIDGE, spec["root"]]
        importlib.invalidate_caches()
        os.environ.setdefault("LLM_CACHE_ENABLED", "false")
        from loguru import logger  # optional: τ²-bench's own dependency, in the worker only
        logger.remove()
    return importlib.import_module("tau2.run")


def load_tasks(spec: dict[str, Any], domain: str, split: str) -> list[dict[str, Any]]:
    """In a worker: the tasks of ``domain``'s ``split``, as the official loader gives them."""
    run = _load(spec)
    try:
        tasks = run.load_tasks(domain, split)
    except ValueError as e:  # a split not there (its line names the valid ones), or a task
        # file that does not parse or validate (JSON's and pydantic's errors are ValueErrors)
        folder = Path(spec["root"]) / "tau2" / "data" / "tau2" / "domains" / domain
        said = " ".join(str(e).split())
        raise Tau2Error(f"τ²-bench {domain} ({folder}): {said}") from None
    # the fields the file sets: a default the loader fills (a message's timestamp: now) would
    # make two loads of one file differ
    return [t.model_dump(mode="json", exclude_unset=True) for t in tasks]


def simulate(spec: dict[str, Any], domain: str, task: dict[str, Any],
             trial: dict[str, Any]) -> dict[str, Any]:
    """In a worker: one trial by the official runner (``trial``: its ``seed``, ``max_steps``,
    ``max_errors`` and the ``agent_args`` and ``user_args`` the two models get); the
    simulation without its reward (scored apart, by :func:`evaluate`)."""
    run = _load(spec)
    from tau2.data_model.tasks import Task  # optional: the official package, in the worker
    from tau2.evaluator.evaluator import EvaluationType  # optional: as above
    simulation = run.run_task(
        domain=domain, task=Task.model_validate(task), agent="llm_agent",
        user="user_simulator", llm_agent=AGENT_LLM, llm_args_agent=dict(trial["agent_args"]),
        llm_user=USER_LLM, llm_args_user=dict(trial["user_args"]),
        max_steps=trial["max_steps"], max_errors=trial["max_errors"],
        evaluation_type=EvaluationType.ENV, seed=trial["seed"])
    simulation.reward_info = None
    return simulation.model_dump(mode="json")


def evaluate(spec: dict[str, Any], domain: str, task: dict[str, Any],
             simulation: dict[str, Any], nl_assertions: bool) -> dict[str, Any]:
    """In a worker: the official ``evaluate_simulation`` (``ALL``, or ``ALL_WITH_NL_ASSERTIONS``
    when ``nl_assertions``: its judge calls are asked of the run); plus, for a failed DB
    check, the differences between the gold and the agent's final databases."""
    _load(spec)
    from tau2.data_model.simulation import SimulationRun  # optional: the official package
    from tau2.data_model.tasks import Task  # optional: as above
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # optional
    sim = SimulationRun.model_validate(simulation)
    the_task = Task.model_validate(task)
    kind = EvaluationType.ALL_WITH_NL_ASSERTIONS if nl_assertions else EvaluationType.ALL
    info = evaluate_simulation(simulation=sim, task=the_task, evaluation_type=kind,
                               solo_mode=False, domain=domain)
    out: dict[str, Any] = {"reward_info": info.model_dump(mode="json")}
    if info.db_check is not None and not info.db_check.db_match:
        out["db_diff"] = db_diff(domain, the_task, sim)
    return out


def _databases(env: Any) -> dict[str, Any]:
    dbs = {"db": env.tools.db.model_dump(mode="json") if env.tools is not None else None}
    if getattr(env, "user_tools", None) is not None and env.user_tools.db is not None:
        dbs["user_db"] = env.user_tools.db.model_dump(mode="json")
    return dbs


def _diff(gold: Any, agent: Any, path: str, rows: list[dict[str, Any]]) -> None:
    """Where ``agent`` differs from ``gold``: into dicts only where they differ (equality of
    whole records is fast; a database has thousands), anything else shown whole."""
    if gold == agent:
        return
    if isinstance(gold, dict) and isinstance(agent, dict):
        for key in sorted(set(gold) | set(agent), key=str):
            where = f"{path}[{key!r}]"
            if key not in agent:
                rows.append({"path": where, "kind": "removed", "gold": gold[key]})
            elif key not in gold:
                rows.append({"path": where, "kind": "added", "agent": agent[key]})
            else:
                _diff(gold[key], agent[key], where, rows)
        return
    rows.append({"path": path, "kind": "changed", "gold": gold, "agent": agent})


def db_diff(domain: str, task: Any, sim: Any) -> list[dict[str, Any]]:
    """The paths where the agent's final databases differ from the gold ones, each built as
    the official environment evaluator builds them (shown, never scored)."""
    from tau2.registry import registry  # optional: the official package
    make = registry.get_env_constructor(domain)
    state = task.initial_state
    init = {"initialization_data": state.initialization_data if state else None,
            "initialization_actions": state.initialization_actions if state else None}
    predicted = make()
    predicted.set_state(message_history=sim.messages, **init)
    gold = make()
    gold.set_state(message_history=(state.message_history if state else None) or [], **init)
    for action in (task.evaluation_criteria.actions or []):
        try:
            gold.make_tool_call(tool_name=action.name, requestor=action.requestor,
                                **action.arguments)
        except Exception:  # noqa: BLE001, S112 - as officially: a failing gold action is skipped
            continue
    rows: list[dict[str, Any]] = []
    _diff(_databases(gold), _databases(predicted), "", rows)
    rows.sort(key=lambda r: r["path"])
    return rows[:DIFF_MAX] + ([{"path": f"... {len(rows) - DIFF_MAX} more", "kind": ""}]
                              if len(rows) > DIFF_MAX else [])


def verdict_row(sim: Any) -> dict[str, Any]:
    """One simulation's official verdict as a JSON line."""
    info = sim.reward_info
    return {"simulation_id": sim.id, "task_id": sim.task_id, "trial": sim.trial,
            "reward": info.reward if info is not None else None,
            "reward_breakdown": {str(getattr(k, "value", k)): v for k, v in
                                 ((info.reward_breakdown or {}) if info else {}).items()},
            "db_match": info.db_check.db_match if info is not None and info.db_check else None,
            "termination_reason": sim.termination_reason.value}


def score_results(spec: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """In a worker: an official results file scored by the official
    ``compute_simulation_rewards`` (``tau2 evaluate-trajs``'s, evaluation ``ALL``)."""
    _load(spec)
    from tau2.data_model.simulation import Results  # optional: the official package
    from tau2.evaluator.evaluator import EvaluationType  # optional: as above
    from tau2.scripts.evaluate_trajectories import compute_simulation_rewards  # optional
    try:
        results = Results.load(Path(path))
    except OSError as e:
        raise Tau2Error(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:  # pydantic's ValidationError, or JSON that does not parse
        first = str(e).splitlines()
        raise Tau2Error(f"{path} is not a τ²-bench results file ({' '.join(first[:3])})"
                        ) from None
    missing = sorted({s.task_id for s in results.simulations} - {t.id for t in results.tasks})
    if missing:
        raise Tau2Error(f"{path}: simulations of tasks the file does not hold: "
                        f"{', '.join(missing[:5])}")
    scored = compute_simulation_rewards(results, EvaluationType.ALL)
    return [verdict_row(s) for s in scored.simulations]


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null (a child process's complaints included)."""
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def export_results(spec: dict[str, Any], path: str, domain: str, tasks: list[dict[str, Any]],
                   simulations: list[dict[str, Any]], config: dict[str, Any]) -> int:
    """In a worker: a run's simulations (each with its reward) as an official results file
    (``tau2.data_model.simulation.Results``, with the official run info); returns the count."""
    run = _load(spec)
    from tau2.data_model.simulation import Results, SimulationRun  # optional: official
    from tau2.data_model.tasks import Task  # optional: as above
    with _quiet_stderr():  # the official info asks git for a commit: none here
        info = run.get_info(domain=domain, agent="llm_agent", user="user_simulator",
                            llm_agent=config["agent_model"], llm_user=config["user_model"],
                            llm_args_agent=config.get("agent_args"),
                            llm_args_user=config.get("user_args"),
                            num_trials=config["trials"], max_steps=config["max_steps"],
                            max_errors=config["max_errors"], seed=config.get("seed"))
    results = Results(info=info, tasks=[Task.model_validate(t) for t in tasks],
                      simulations=[SimulationRun.model_validate(s) for s in simulations])
    results.save(Path(path))
    return len(results.simulations)
