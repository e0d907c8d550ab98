"""Steps 2 to 4 of planning: select tasks, resolve them, recommend their metrics; each
returns what it decided with a reason per decision, for the trace and the checkpoint."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from assay.errors import AssayError, ConfigError
from assay.metrics.format import counted
from assay.plan.field import canonical_set, measures_of
from assay.plan.hub import fetch_split, resolve_hub
from assay.plan.intent import LANGUAGE_WORDS
from assay.plan.retrieve import Candidate
from assay.plan.schema import AgentChoice, HubRef, Intent, MetricChoice, PlanTask
from assay.sandbox import bwrap_problem, check_isolation
from assay.tasks.capabilities import CAPABILITIES
from assay.tasks.gallery.entry import find_entry
from assay.tasks.registry import catalogue, plannable_tasks

#: tasks in a plan when the request states no limit
DEFAULT_MAX_TASKS = 5
#: gallery tasks taken by retrieval when the request states no quota (one per domain)
DEFAULT_GALLERY = 3
#: Hub datasets searched for when the request states no quota and the gallery has a gap
DEFAULT_HUB = 2


@dataclass
class Selection:
    tasks: list[PlanTask]
    notes: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)
    skipped: list[dict[str, str]] = field(default_factory=list)
    hub_queries: list[str] = field(default_factory=list)
    hub_quota: int = 0


def _listed(name: str) -> Any:
    return catalogue().get(name)


def capabilities_of(name: str) -> list[str]:
    """The radar axes a task counts for: the category it declares."""
    listed = _listed(name)
    return [listed.info.category] if listed is not None and listed.info.category else []


def is_agent(name: str) -> bool:
    listed = _listed(name)
    return bool(listed is not None and listed.info.agent)


def agent_tools(name: str) -> list[str]:
    """The reference agent's tools a plan runs ``name`` with (``[]``: the model alone)."""
    listed = _listed(name)
    return list(listed.info.agent_tools) if listed is not None else []


def source_of(name: str) -> str:
    return "builtin" if name in plannable_tasks() else "gallery"


def available(name: str) -> tuple[bool, str]:
    """Whether a task can run here, and why: what it declares; code needs the bubblewrap
    sandbox unless weak isolation is allowed."""
    listed = _listed(name)
    declared = listed.info.can_run() if listed is not None else None
    if declared is not None:
        return declared
    entry = find_entry(name)
    if entry is not None and entry.eval_type == "code":
        problem = bwrap_problem()
        if problem is None:
            return True, "data from PyPI; tests run in the bubblewrap sandbox"
        try:
            check_isolation(name)
        except ConfigError:
            return False, (f"{name} runs model-written code only inside the bubblewrap "
                           f"sandbox, and {problem}")
        return True, f"data from PyPI; tests run with weak isolation, as {problem}"
    return True, "data from the gallery's source (PyPI wheel or the package)"


def _take_canonical(sel: Selection, asked: list[str], field: dict[str, list[Candidate]],
                    room: int, usable: Any, add: Any, *, cheap: bool) -> int:
    """Each capability's canonical set, round-robin within ``room`` (a capability with none
    that runs here: its best candidate); what is left out is said in a note."""
    sets: dict[str, list[Candidate]] = {}
    for cap in asked:
        ok = [c for c in field.get(cap, []) if usable(c)]
        sets[cap] = canonical_set(ok) if ok else []
        if not field.get(cap):
            sel.notes.append(f"no catalogue task measures {cap} ({CAPABILITIES[cap].describe}); "
                             "add a task file or a Hub dataset for it")
        elif not ok:  # why its best task does not (one that needs your data says how)
            best = field[cap][0].name
            sel.notes.append(f"no task that measures {cap} can run in the plan: {best}: "
                             f"{available(best)[1]}")
    if cheap:
        for cap, got in sets.items():
            if len(got) > 1:
                sel.notes.append(f"a cheap run: {cap} gets {got[0].name} only (the field "
                                 f"also reports {', '.join(c.name for c in got[1:])})")
                sets[cap] = got[:1]
    taken, left = 0, []
    for i in range(max((len(v) for v in sets.values()), default=0)):
        for cap in asked:
            if i >= len(sets[cap]):
                continue
            c = sets[cap][i]
            if c.name in {t.task for t in sel.tasks}:
                continue
            if taken >= room:
                left.append(f"{c.name} ({cap})")
                continue
            add(c.name, f"{'canonical set' if c.standing == 'canonical' else 'best available'}"
                        f" for {cap}: {c.reason}", [cap], c.chosen)
            taken += 1
    if left:
        sel.notes.append(f"left out for the plan's limit of {counted(len(sel.tasks), 'task')}: "
                         f"{', '.join(left)} (raise 'at most N benchmarks' to include them)")
    return taken


def _gap_languages(intent: Intent) -> list[str]:
    return [x for x in intent.languages if x not in ("en",)]


def select(intent: Intent, candidates: list[Candidate], *, hub_enabled: bool,
           more: Any = None, field: dict[str, list[Candidate]] | None = None) -> Selection:
    """The plan's tasks: every named benchmark, then canonical sets for unmeasured capabilities
    (``field``) or each named domain's best candidate (``more``), within the quotas."""
    budget = intent.budget
    max_tasks = budget.max_tasks if budget.max_tasks is not None else DEFAULT_MAX_TASKS
    sel = Selection(tasks=[])
    sel.reasons["max_tasks"] = (f"{max_tasks}, stated" if budget.max_tasks is not None
                                else f"{max_tasks}, the default")
    chosen: list[str] = []

    def add(name: str, why: str, caps: list[str] | None = None,
            parts: dict[str, str] | None = None) -> None:
        chosen.append(name)
        tools = agent_tools(name)
        agent = AgentChoice(tools=tools) if tools else None
        if agent is not None:
            parts = {**(parts or {}), "agent": f"run with {agent.label()}: the score is the "
                                               "model with this agent"}
        sel.tasks.append(PlanTask(task=name, source=source_of(name),  # type: ignore[arg-type]
                                  capabilities=caps or capabilities_of(name),
                                  why={"selected": why, **(parts or {})}, agent=agent))

    for name in intent.benchmarks:
        add(name, "named in the request (always honoured)", parts={
            "prior": "named in the request", "words": f"the request names {name}",
            "model": "not needed"})
    if len(intent.benchmarks) > max_tasks:
        sel.notes.append(f"the request names {len(intent.benchmarks)} benchmarks but allows "
                         f"{counted(max_tasks, 'task')}; every named benchmark is kept")
    for u in intent.unknown_benchmarks:
        close = ", ".join(u.get("closest") or []) or "none close"
        if u.get("planned"):
            sel.notes.append(f"{u['name']} is the gallery's {u['planned']}, which is planned, "
                             f"not runnable yet: {u.get('why') or 'see assay list tasks'}")
            continue
        if u.get("suite"):  # said once for the suite, below
            continue
        sel.notes.append(f"{u['name']} was named but is not in the gallery (closest: {close}); "
                         "add it as a task file or a Hub dataset if you need it")
    for suite in dict.fromkeys(u["suite"] for u in intent.unknown_benchmarks if u.get("suite")):
        lacking = [u["name"] for u in intent.unknown_benchmarks if u.get("suite") == suite]
        sel.notes.append(f"{suite.strip()} also holds {', '.join(lacking)}, which the gallery "
                         "lacks; add them as task files or Hub datasets if you need them")

    field = field or {}
    measured = {c for n in chosen for c in measures_of(n)}
    asked = [c for c in intent.capabilities if c not in measured]
    covered = {c for n in chosen for c in capabilities_of(n)}
    wanted = [] if asked else [d for d in intent.domains if d not in covered]
    if budget.gallery is not None:
        quota = budget.gallery
        sel.reasons["gallery"] = f"{quota}, stated"
    elif asked:
        quota = max_tasks
        sel.reasons["gallery"] = (f"{quota}: each capability asked for gets the field's "
                                  "canonical set, within the plan's limit")
    else:
        quota = min(DEFAULT_GALLERY, len(wanted)) if wanted else (
            0 if chosen else min(2, DEFAULT_GALLERY))
        sel.reasons["gallery"] = (f"{quota}, the default (one per domain not covered by a "
                                  "named benchmark, at most 3)" if wanted else
                                  f"{quota}, the default")
    room = max(0, min(quota, max_tasks - len(chosen)))

    def usable(c: Candidate) -> bool:
        if c.name in chosen:
            return False
        if intent.agent is False and is_agent(c.name):
            sel.skipped.append({"name": c.name, "why": "an agent task; the request is text only"})
            return False
        ok, why = available(c.name)
        if not ok:
            sel.skipped.append({"name": c.name, "why": why})
        return ok

    taken = _take_canonical(sel, asked, field, room, usable, add, cheap=bool(
        {"a quick, small run", "keep the cost low"} & set(intent.special_requests)))
    for domain in wanted:
        if taken >= room:
            break
        mine = [c for c in candidates if c.domain == domain]
        best = next((c for c in mine if c.quality and usable(c)), None)
        why = "best match for"
        if best is None:
            # the best cannot run here (GAIA offline): the best that can, marked below threshold
            best = next((c for c in mine if not c.quality and usable(c)), None)
            if best is None and more is not None:
                best = next((c for c in more(domain) if c.name not in {x.name for x in mine}
                             and usable(c)), None)
            why = "best available match (below the quality threshold) for"
        if best is not None:
            add(best.name, f"{why} {domain}: {best.reason}", parts={
                "prior": "none (no capability named: chosen by the words)",
                "words": best.reason, "model": "-"})
            taken += 1
        else:
            sel.notes.append(f"no gallery task for {domain} can run here")
    if not wanted and not asked and not chosen:
        for c in candidates:
            if taken >= room:
                break
            if c.quality and usable(c):
                add(c.name, f"best match for the request: {c.reason}", parts={
                    "prior": "none (no capability named: chosen by the words)",
                    "words": c.reason, "model": "-"})
                taken += 1
    # the Hub: a quota the user stated, else a default when the gallery has a gap
    gaps = _gap_languages(intent)
    unknown = [u for u in intent.unknown_benchmarks if not u.get("planned")]
    missing = [d for d in wanted if not any(capabilities_of(n) == [d] for n in chosen)]
    missing += [c for c in asked if not any(c in measures_of(n) for n in chosen)]
    if budget.hub is not None:
        sel.hub_quota = budget.hub
        sel.reasons["hub"] = f"{budget.hub}, stated"
    elif hub_enabled and (gaps or missing or unknown):
        sel.hub_quota = DEFAULT_HUB
        sel.reasons["hub"] = (f"{DEFAULT_HUB}, the default (the gallery has a gap"
                              + (": a named benchmark it does not hold)" if unknown else ")"))
    else:
        sel.hub_quota = 0
        sel.reasons["hub"] = ("0: the Hub is offline (HF_HUB_OFFLINE)" if not hub_enabled
                              else "0: the gallery covers the request")
    sel.hub_quota = min(sel.hub_quota, max(0, max_tasks - len(chosen)))
    for lang in gaps:
        word = LANGUAGE_WORDS.get(lang, (lang,))[0]
        sel.notes.append(f"the gallery has no {word.title()} benchmark (its entries are English)"
                         + ("; searching the Hub" if sel.hub_quota and hub_enabled else
                            "; allow the Hub (online, quota > 0) or add a task file"))
        for d in (intent.domains or ["task"]):
            sel.hub_queries.append(f"{word} {d.replace('_', ' ')}")
    for d in missing:
        sel.hub_queries.append(d.replace("_", " "))
    for u in reversed(unknown):
        sel.hub_queries.insert(0, u["name"])
    if not sel.tasks and not (intent.benchmarks or intent.capabilities or intent.domains):
        sel.notes.append("the request names no benchmark and no capability the planner "
                         "knows; name one ('assay list tasks --capability code' lists the "
                         "tasks of a capability, 'assay list tasks' every benchmark)")
    return sel


def resolve_task(task: PlanTask, intent: Intent) -> dict[str, str]:
    """Fill a gallery or built-in task's options and limit in place; the reasons."""
    why: dict[str, str] = {}
    if intent.budget.limit is not None:
        task.limit = intent.budget.limit
        why["limit"] = f"{task.limit} samples, stated in the request"
    elif task.limit is None:
        why["limit"] = "every sample (no limit stated; use --limit for a smoke run)"
    entry = find_entry(task.task)
    if entry is not None:
        src = entry.source.describe() if entry.source else f"the {entry.task} task"
        why["data"] = f"{src}; {entry.size or '?'} samples"
        if entry.eval_type in ("generate", "multiple_choice") and \
                "few-shot prompting" in intent.special_requests and "fewshot" not in task.options:
            task.options["fewshot"] = 5
            why["fewshot"] = "5 examples: the request asks for few-shot prompting"
    ok, avail = available(task.task)
    why["available"] = avail if ok else f"NOT AVAILABLE: {avail}"
    task.why.update({f"resolve.{k}": v for k, v in why.items()})
    return why


def resolve_hub_task(dataset_id: str, candidate_reason: str, *, ask: Any = None,
                     limit: int | None = None) -> tuple[PlanTask | None, dict[str, Any]]:
    """A Hub dataset as a generic QA task (unverified), or ``None`` with why."""
    res = resolve_hub(dataset_id, ask=ask)
    info = {"id": dataset_id, "config": res.config, "split": res.split, "columns": res.columns,
            "eval_type": res.eval_type, "fields": res.fields, "reasons": res.reasons,
            "ok": res.ok, "problem": res.problem, "model_calls": res.model_calls}
    if not res.ok:
        return None, info
    options = {k: v for k, v in res.fields.items() if v}
    task = PlanTask(task="qa", source="hub",
                    hub=HubRef(id=dataset_id, config=res.config, split=res.split,
                               revision=res.revision),
                    options=options, limit=limit, capabilities=[],
                    why={"selected": f"Hub search (unverified: runs as generic QA): "
                                     f"{candidate_reason}",
                         **{f"resolve.{k}": v for k, v in res.reasons.items()}})
    return task, info


#: qa scorers by the registry metric they compute
QA_SCORERS = {"exact_match": "exact", "normalized_match": "normalized",
              "includes_match": "includes", "numeric_match": "numeric", "token_f1": "f1",
              "choice_accuracy": "choice", "math_verify": "math"}
#: what each built-in computes, primary first
BUILTIN_METRICS = {"converse": (["judge_score"], [])}


def computable(task: PlanTask) -> list[str]:
    if task.source == "hub" or task.task == "qa":
        # qa reports its scorer's verdicts as "accuracy", and the extraction rate
        return [*QA_SCORERS, "extraction_rate"]
    if task.task in BUILTIN_METRICS:
        primary, rest = BUILTIN_METRICS[task.task]
        return [*primary, *rest]
    entry = find_entry(task.task)
    if entry is None:
        return []
    m = entry.metrics
    return [m.primary, *m.secondary, *[d for d in m.diagnostic]]


def recommend_metrics(task: PlanTask, *, ask: Any = None, answer_sample: list[Any] | None = None
                      ) -> dict[str, Any]:
    """Set ``task.metrics`` by the rules, asking the planner model only where they cannot
    decide (a Hub dataset's mixed answers); the reasons and the model call."""
    out: dict[str, Any] = {"model_calls": []}
    entry = find_entry(task.task) if task.source != "hub" else None
    if entry is not None:
        m = entry.metrics
        task.metrics = [MetricChoice(name=m.primary, role="primary",
                                     why="the entry's primary metric (its verified contract)")]
        task.metrics += [MetricChoice(name=s, role="secondary", why="the entry's secondary")
                         for s in m.secondary]
        task.metrics += [MetricChoice(name=d, role="diagnostic", why="the entry's diagnostic")
                         for d in m.diagnostic if d not in {x.name for x in task.metrics}]
        out["rule"] = f"{task.task}: the gallery entry's metrics"
        return out
    if task.task in BUILTIN_METRICS:
        primary, rest = BUILTIN_METRICS[task.task]
        task.metrics = [MetricChoice(name=primary[0], role="primary",
                                     why=f"{task.task}'s verdicts are judge scores")]
        out["rule"] = f"{task.task}: its judge's score"
        return out
    # a Hub dataset run as qa: decide by the answers
    primary, why = _qa_rule(task, answer_sample or [])
    if primary is None and ask is not None:
        schema = {"type": "object", "properties": {"primary": {"type": "string",
                                                               "enum": list(QA_SCORERS)}},
                  "required": ["primary"], "additionalProperties": False}
        prompt = ("Pick the metric that decides whether an answer to this dataset is right.\n"
                  f"Dataset: {task.label}\nExample answers: "
                  f"{[str(a)[:60] for a in (answer_sample or [])[:5]]}\n"
                  f"Metrics: {', '.join(QA_SCORERS)}\nJSON:")
        reply = ask(prompt, schema)
        accepted = isinstance(reply, dict) and reply.get("primary") in QA_SCORERS
        out["model_calls"].append({"step": "metrics", "prompt": prompt, "reply": reply,
                                   "accepted": accepted})
        if accepted:
            primary, why = reply["primary"], "chosen by the planner model from the registry"
    if primary is None:
        primary, why = "normalized_match", "no rule applied and no planner answer: " \
                                           "normalized exact match, the safe default"
    task.metrics = [MetricChoice(name=primary, role="primary", why=why),
                    MetricChoice(name="extraction_rate", role="diagnostic",
                                 why="share of replies with an answer")]
    task.options["scorer"] = QA_SCORERS[primary]
    out["rule"] = why
    return out


def _qa_rule(task: PlanTask, answers: list[Any]) -> tuple[str | None, str]:
    if task.options.get("choices_key"):
        return "choice_accuracy", "the dataset has answer choices"
    if not answers:
        return None, "no answers seen"
    texts = [str(a).strip() for a in answers]

    def numeric(t: str) -> bool:
        try:
            float(t.replace(",", ""))
        except ValueError:
            return False
        return True

    if all(numeric(t) for t in texts):
        return "numeric_match", "every sampled answer is a number"
    if all(len(t.split()) <= 5 for t in texts):
        return "normalized_match", "the answers are short texts"
    if all(len(t.split()) > 5 for t in texts):
        return "token_f1", "the answers are long texts (token overlap)"
    return None, "mixed answers"


def check_metrics(task: PlanTask, *, required: bool = True) -> None:
    can = computable(task)
    if required and not task.metrics:
        raise ConfigError(f"task {task.label}: no metrics; give it exactly one with role "
                          f"primary (this task computes {', '.join(can) or 'its own'})")
    if not can:
        return
    for m in task.metrics:
        if m.name not in can:
            raise ConfigError(f"task {task.label}: metric {m.name} is not computed by this "
                              f"task; choose from {', '.join(can)}")


def answer_sample(task: PlanTask) -> list[Any]:
    """A few answers of a Hub dataset (for the metric rules)."""
    key = task.options.get("answer_key")
    if task.hub is None or not key:
        return []
    try:
        path = fetch_split(task.hub)
    except AssayError:
        return []
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if key in row:
                out.append(row[key])
            if len(out) >= 20:
                break
    return out
