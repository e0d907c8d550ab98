"""``assay plan``: one sentence to a reviewed, traced plan file. The session is a row of
``plan_sessions`` saved after every step, so ``--resume ID`` continues after Ctrl-C or kill -9;
``--yes`` approves every checkpoint, and a closed input pauses, never approves."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.redact import redact_url
from assay.core.version import __version__
from assay.errors import AssayError, ConfigError
from assay.plan.ask import Asker
from assay.plan.field import capability_candidates
from assay.plan.hub import hub_enabled, search_hub
from assay.plan.intent import domain_words, parse_rules
from assay.plan.intent_model import parse_with_model
from assay.plan.retrieve import embedding_scores, retrieve, retriever
from assay.plan.review import Echo, PlanPaused, Prompt, checkpoint
from assay.plan.schema import HubRef, Intent, Models, Plan, PlanTask, write_plan
from assay.plan.steps import (
    answer_sample,
    check_metrics,
    recommend_metrics,
    resolve_hub_task,
    resolve_task,
    select,
)
from assay.store.sqlite import new_run_id


@dataclass
class Settings:
    """What a planning session was started with."""

    model: str = "local"
    planner: str | None = None  # None: rules only
    judge: str | None = None
    output: str = "plan.yaml"
    hub: bool | None = None     # None: on unless HF_HUB_OFFLINE
    base_url: str | None = None
    #: an embedding model at an OpenAI-compatible endpoint (``base_url``), mixed with BM25
    embeddings: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """As stored: credentials in ``base_url`` are removed (a resume asks for them)."""
        out = dict(self.__dict__)
        out["base_url"] = redact_url(self.base_url)
        return out


class Session:
    """A planning session: its state, saved in the store after every change."""

    def __init__(self, store: Any, session_id: str, state: dict[str, Any],
                 base_url: str | None = None) -> None:
        self.store = store
        self.id = session_id
        self.state = state
        #: the endpoint as given (the stored one has its credentials removed)
        self.base_url = base_url or state["settings"].get("base_url")

    @classmethod
    def start(cls, store: Any, request: str, settings: Settings) -> Session:
        request = " ".join(request.split())
        if not request:
            raise ConfigError("the request is empty; say what to evaluate, e.g. assay plan "
                              "\"tool calling and grade-school math\"")
        state = {"request": request, "stage": "intent", "settings": settings.to_dict(),
                 "plan": None, "history": [], "trace": [], "output": settings.output}
        sid = store.create_plan_session(session_id=new_run_id(), request=request,
                                        model={"model": settings.model,
                                               "planner": settings.planner or "rules"},
                                        state=state, package_version=__version__)
        return cls(store, sid, state, settings.base_url)

    @classmethod
    def load(cls, store: Any, session_id: str, base_url: str | None = None) -> Session:
        found = store.get_plan_session(session_id)
        if found["state"].get("stage") == "done":
            raise ConfigError(f"planning session {found['id']} is finished; its plan is "
                              f"{found['state'].get('output')}")
        store.save_plan_session(found["id"], found["state"], "running")
        return cls(store, found["id"], found["state"], base_url)

    def save(self, status: str | None = None) -> None:
        self.store.save_plan_session(self.id, self.state, status)

    @property
    def settings(self) -> Settings:
        return Settings(**self.state["settings"])

    @property
    def plan(self) -> Plan:
        return Plan.model_validate(self.state["plan"])

    def set_plan(self, plan: Plan, *, remember: bool = False) -> None:
        if remember and self.state["plan"] is not None:
            self.state["history"].append({"stage": self.state["stage"], "plan": self.state["plan"]})
        self.state["plan"] = plan.model_dump(mode="json", exclude={"trace"})

    def trace(self, step: str, **entry: Any) -> None:
        self.state["trace"].append({"step": step, "at": round(time.time(), 3), **entry})


def _step_intent(s: Session, ask: Any) -> None:
    request = s.state["request"]
    result = parse_with_model(request, ask) if ask is not None else parse_rules(request)
    settings = s.settings
    plan = Plan(request=request, intent=result.intent,
                models=Models(model=settings.model, judge=settings.judge,
                              planner=settings.planner or "rules"))
    s.set_plan(plan)
    s.trace("intent", inputs={"request": request}, outputs=result.intent.model_dump(
        mode="json"), reasons=result.reasons, parser=result.parser,
        domains_from=result.domains_from, suggested=result.suggested,
        model_calls=result.model_calls)
    s.state["stage"] = "select"


def _hub_enabled(settings: Settings) -> bool:
    return hub_enabled() if settings.hub is None else (settings.hub and hub_enabled())


def _step_select(s: Session) -> None:
    plan = s.plan
    intent = plan.intent
    query = " ".join([plan.request, *domain_words(plan.request)])
    guessed = s.state["trace"][0].get("domains_from") == "planner"
    embed = None
    retrieval = {"method": "bm25"}
    settings = s.settings
    if settings.embeddings:
        try:
            embed = embedding_scores(plan.request, model=settings.embeddings, base_url=s.base_url)
            retrieval = {"method": "bm25+embeddings", "model": settings.embeddings}
        except AssayError as e:
            plan.notes.append(f"{e}: retrieval used BM25 alone")
            retrieval = {"method": "bm25", "embeddings_error": str(e)}
    suggested = frozenset(s.state["trace"][0].get("suggested") or ())
    field = {c: capability_candidates(query, c, suggested=suggested, embed=embed,
                                      planner=settings.planner)
             for c in intent.capabilities}
    candidates = retrieve(query, intent.domains, request_first=guessed, embed=embed,
                          first=list(field.values()))
    hub_on = _hub_enabled(s.settings)
    sel = select(intent, candidates, hub_enabled=hub_on, field=field,
                 more=lambda d: retriever().search(query, domain=d, embed=embed, floor=0.0))
    hub_found: list[dict[str, Any]] = []
    hub_error = None
    if sel.hub_quota and hub_on:
        seen: set[str] = set()
        try:
            for q in sel.hub_queries:
                for c in search_hub(q, limit=sel.hub_quota):
                    if c.id not in seen and len(hub_found) < sel.hub_quota:
                        seen.add(c.id)
                        hub_found.append({"id": c.id, "score": c.score, "reason": c.reason,
                                          "query": q, "verified": False})
        except AssayError as e:
            hub_error = str(e)
            sel.notes.append(f"the Hub search failed: {e}")
    tasks = list(sel.tasks)
    for h in hub_found:
        tasks.append(PlanTask(task="qa", source="hub", hub=HubRef(id=h["id"]),
                              why={"selected": f"Hub search for {h['query']!r} (unverified: "
                                   f"runs as generic QA): {h['reason']}"}))
    plan.tasks = tasks
    plan.notes = [*plan.notes, *sel.notes]
    s.set_plan(plan)
    s.trace("select", inputs={"domains": intent.domains, "benchmarks": intent.benchmarks,
                              "budget": intent.budget.model_dump()},
            outputs={"tasks": [t.label for t in tasks], "notes": sel.notes},
            reasons={**sel.reasons, **{t.label: t.why.get("selected", "") for t in tasks}},
            candidates=[c.to_dict() for c in candidates[:15]], skipped=sel.skipped,
            retrieval=retrieval,
            hub={"quota": sel.hub_quota, "queries": sel.hub_queries, "found": hub_found,
                 "error": hub_error})
    s.state["stage"] = "checkpoint:plan"


def _step_resolve(s: Session, ask: Any) -> None:
    plan = s.plan
    reasons: dict[str, Any] = {}
    calls: list[dict[str, Any]] = []
    kept: list[PlanTask] = []
    for task in plan.tasks:
        if task.source == "hub" and task.hub is not None:
            try:
                resolved, info = resolve_hub_task(task.hub.id, task.why.get("selected", ""),
                                                  ask=ask, limit=plan.intent.budget.limit)
            except AssayError as e:  # the Hub went away between search and resolution
                resolved, info = None, {"id": task.hub.id, "problem": str(e)}
            calls += info.get("model_calls") or []
            reasons[f"hub:{task.hub.id}"] = info
            if resolved is None:
                plan.notes.append(f"hub:{task.hub.id} dropped: {info.get('problem')}")
                continue
            resolved.why["selected"] = task.why.get("selected", resolved.why["selected"])
            kept.append(resolved)
            continue
        reasons[task.label] = resolve_task(task, plan.intent)
        kept.append(task)
    plan.tasks = kept
    s.set_plan(plan)
    s.trace("resolve", inputs={"tasks": [t.label for t in plan.tasks]},
            outputs={t.label: {"options": t.options, "limit": t.limit,
                               "hub": t.hub.model_dump() if t.hub else None}
                     for t in plan.tasks},
            reasons=reasons, model_calls=calls)
    s.state["stage"] = "checkpoint:resolution"


def _step_metrics(s: Session, ask: Any) -> None:
    plan = s.plan
    reasons: dict[str, Any] = {}
    calls: list[dict[str, Any]] = []
    for task in plan.tasks:
        answers = answer_sample(task) if task.source == "hub" else None
        out = recommend_metrics(task, ask=ask, answer_sample=answers)
        calls += out.pop("model_calls")
        reasons[task.label] = {"rule": out.get("rule"),
                               "metrics": [m.model_dump() for m in task.metrics]}
    s.set_plan(plan)
    s.trace("metrics", inputs={"tasks": [t.label for t in plan.tasks]},
            outputs={t.label: {"primary": t.primary,
                               "others": [m.name for m in t.metrics if m.role != "primary"]}
                     for t in plan.tasks},
            reasons=reasons, model_calls=calls)
    s.state["stage"] = "checkpoint:metrics"


def drive(s: Session, *, prompt: Prompt, echo: Echo, yes: bool = False, asker: Any = None) -> Path:
    """Run the session from its stage to the written plan; returns the plan file."""
    ask = asker
    while True:
        stage = s.state["stage"]
        before = len(asker.calls) if asker is not None else 0
        steps_before = len(s.state["trace"])
        if stage == "intent":
            _step_intent(s, ask)
        elif stage == "select":
            _step_select(s)
        elif stage == "resolve":
            s.set_plan(s.plan, remember=True)
            s.state["history"][-1]["stage"] = "checkpoint:plan"
            _step_resolve(s, ask)
        elif stage == "metrics":
            s.set_plan(s.plan, remember=True)
            s.state["history"][-1]["stage"] = "checkpoint:resolution"
            _step_metrics(s, ask)
        elif stage.startswith("checkpoint:"):
            name = stage.split(":", 1)[1]
            nxt = checkpoint(s, name, prompt, echo, ask, yes)
            s.state["stage"] = nxt if nxt.startswith("checkpoint:") or nxt in (
                "resolve", "metrics", "done") else f"checkpoint:{nxt}"
        elif stage == "done":
            return _finish(s, asker)
        else:  # pragma: no cover - a state written by another version
            raise ConfigError(f"planning session {s.id} is at an unknown stage {stage!r}")
        if asker is not None and len(asker.calls) > before and len(s.state["trace"]) > \
                steps_before:
            # the raw exchanges (prompt, reply text, seconds) beside the parsed ones
            s.state["trace"][-1]["raw_model_calls"] = asker.calls[before:]
        s.save()


def _finish(s: Session, asker: Any) -> Path:
    plan = s.plan
    for task in plan.tasks:
        check_metrics(task)
    out = Path(s.state["output"])
    if out.exists():
        # an edited plan is work: the one replaced is kept beside the new one
        backup = out.with_name(out.name + ".bak")
        out.replace(backup)
        s.trace("write", outputs={"replaced": str(out), "kept_as": str(backup)})
    plan.trace = s.state["trace"]
    write_plan(plan, out)
    s.state["stage"] = "done"
    s.save("finished")
    return out


def plan_request(store: Any, request: str, settings: Settings, *, prompt: Prompt, echo: Echo,
                 yes: bool = False, on_created: Callable[[str], None] | None = None) -> Path:
    """Plan ``request`` in a new session; returns the written plan file."""
    session = Session.start(store, request, settings)
    if on_created is not None:
        on_created(session.id)
    return _run(session, prompt=prompt, echo=echo, yes=yes)


def resume_session(store: Any, session_id: str, *, prompt: Prompt, echo: Echo,
                   yes: bool = False, base_url: str | None = None) -> Path:
    """Continue a session at its stage (``base_url``: again, when it held credentials)."""
    return _run(Session.load(store, session_id, base_url), prompt=prompt, echo=echo, yes=yes)


def _run(session: Session, *, prompt: Prompt, echo: Echo, yes: bool) -> Path:
    settings = session.settings
    asker = None
    if settings.planner:
        asker = Asker(settings.planner, base_url=session.base_url, store=session.store)
    try:
        out = drive(session, prompt=prompt, echo=echo, yes=yes, asker=asker)
    except BaseException:  # a pause (PlanPaused), Ctrl-C or an error: resumable
        session.save("interrupted")
        raise
    finally:
        if asker is not None:
            asker.close()
    return out


__all__ = ["Intent", "PlanPaused", "Session", "Settings", "drive", "plan_request", "resume_session"]
