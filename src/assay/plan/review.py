"""The human checkpoints of a planning session: show the plan, read answers until one is an
action, apply it and trace it, saving after each; a closed input raises :class:`PlanPaused`."""

from __future__ import annotations

import difflib
import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.errors import AssayError
from assay.metrics.format import counted
from assay.plan.checkpoint import PROMPT, interpret
from assay.plan.intent import gallery_names
from assay.plan.schema import HubRef, Plan, PlanTask, plan_from_text, plan_to_text
from assay.plan.steps import (
    answer_sample,
    capabilities_of,
    check_metrics,
    recommend_metrics,
    resolve_hub_task,
    resolve_task,
    source_of,
)
from assay.tasks.gallery.entry import find_entry
from assay.tasks.options import validate_options
from assay.tasks.registry import plannable_tasks, resolve

CHECKPOINTS = ("plan", "resolution", "metrics")
#: the stage that runs after each checkpoint is approved
AFTER = {"plan": "resolve", "resolution": "metrics", "metrics": "done"}


class PlanPaused(AssayError):
    """The session stopped at a checkpoint with no answer (closed input); it resumes."""


Prompt = Callable[[str], "str | None"]
Echo = Callable[[str], None]


#: the intent's ``agent`` as the human reads it (``None``: the request does not say)
AGENT_TEXT = {True: "agent tasks", False: "text only", None: "agent or text (not said)"}


def describe(plan: Plan, checkpoint: str, heading: str | None = None) -> str:
    """What the human sees at a checkpoint (``heading``: instead of the checkpoint's)."""
    lines = [heading or f"checkpoint {CHECKPOINTS.index(checkpoint) + 1}/3: {checkpoint}",
             f"request: {plan.request}",
             f"intent: capabilities {', '.join(plan.intent.capabilities) or '-'}; domains "
             f"{', '.join(plan.intent.domains) or '-'}; named "
             f"{', '.join(plan.intent.benchmarks) or '-'}; languages "
             f"{', '.join(plan.intent.languages)}; {AGENT_TEXT[plan.intent.agent]}"]
    for i, t in enumerate(plan.tasks, 1):
        line = f"  {i}. {t.label} ({t.source})"
        if checkpoint in ("resolution", "metrics"):
            line += f" limit={'all' if t.limit is None else t.limit}" + (
                f" options={t.options}" if t.options or t.limit is not None else "")
            if t.hub:
                line += f" config={t.hub.config or 'default'} split={t.hub.split or '-'}"
        if checkpoint == "metrics":
            line += f" primary={t.primary}"
        line += f"\n     why: {t.why.get('selected', '')}"
        if t.agent is not None:
            line += f"\n     runs with {t.agent.label()}: the score is the model with it"
        lines.append(line)
    if not plan.tasks:
        lines.append("  (no tasks)")
    lines += [f"  note: {n}" for n in plan.notes]
    return "\n".join(lines)


def _find_task(plan: Plan, target: str) -> int | None:
    t = target.strip().lower()
    if t.isdigit() and 1 <= int(t) <= len(plan.tasks):
        return int(t) - 1
    for i, task in enumerate(plan.tasks):
        if t in (task.task.lower(), task.label.lower()) or (task.hub and t == task.hub.id.lower()):
            return i
    entry = find_entry(target)
    if entry is not None:
        for i, task in enumerate(plan.tasks):
            if task.task == entry.name:
                return i
    return None


def _new_task(s: Any, target: str, checkpoint: str, ask: Any) -> PlanTask | str:
    """A task the human added, brought up to the current stage; or why it cannot be."""
    plan = s.plan
    if target.lower().startswith("hub:"):
        if checkpoint == "plan":
            return PlanTask(task="qa", source="hub", hub=HubRef(id=target[4:].strip()),
                            why={"selected": "added by the human (a Hub dataset, unverified)"})
        try:
            task, info = resolve_hub_task(target[4:].strip(), "added by the human", ask=ask,
                                          limit=plan.intent.budget.limit)
        except AssayError as e:
            return str(e)
        if task is None:
            return f"{target}: {info.get('problem')}"
    else:
        entry = find_entry(target)
        name = entry.name if entry is not None else (target if target in plannable_tasks()
                                                    else None)
        if name is None or (entry is not None and entry.readiness.status != "ready"):
            close = difflib.get_close_matches(target.lower(), sorted(set(
                gallery_names().values())), n=3)
            return (f"unknown task {target!r}" + (f" (closest: {', '.join(close)})" if close
                                                  else "") + "; see 'assay list tasks'")
        task = PlanTask(task=name, source=source_of(name),  # type: ignore[arg-type]
                        capabilities=capabilities_of(name),
                        why={"selected": "added by the human"})
        if checkpoint in ("resolution", "metrics"):
            resolve_task(task, plan.intent)
    if checkpoint == "metrics":
        recommend_metrics(task, ask=ask, answer_sample=answer_sample(task)
                          if task.source == "hub" else None)
    return task


def _edit(s: Any, echo: Echo) -> str:
    """Open ``$EDITOR`` on the plan; the edited plan is validated before it is taken."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        return "no editor: set $EDITOR (or edit the plan file after it is written)"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "plan.yaml"
        path.write_text(plan_to_text(s.plan, "plan.yaml"), encoding="utf-8")
        try:
            subprocess.run([*shlex.split(editor), str(path)], check=True)  # noqa: S603
        except (OSError, subprocess.CalledProcessError) as e:
            return f"the editor failed ({e}); the plan is unchanged"
        text = path.read_text(encoding="utf-8")
    try:
        edited = plan_from_text(text, "edited plan")
        for task in edited.tasks:
            check_metrics(task, required=s.state["stage"] == "checkpoint:metrics")
        _check_tasks(edited)
    except AssayError as e:
        return f"{e}; the plan is unchanged"
    s.set_plan(edited, remember=True)
    echo(f"plan edited: {counted(len(edited.tasks), 'task')}")
    return ""


def _check_tasks(plan: Plan) -> None:
    """Every task of the plan can be built (names exist, options are valid)."""
    for task in plan.tasks:
        if task.source != "hub":
            validate_options(resolve(task.task).Options, dict(task.options), task.task)


def checkpoint(s: Any, name: str, prompt: Prompt, echo: Echo, ask: Any, yes: bool) -> str:
    """Run one checkpoint to its end; returns the next stage. With ``yes`` the plan is shown
    once, as it is written (after the last checkpoint), not at each."""
    if yes:
        s.trace("checkpoint", checkpoint=name, answers=[{"answer": "--yes", "action": "approve"}])
        echo(f"checkpoint {CHECKPOINTS.index(name) + 1}/3: {name} approved by --yes")
        if name == CHECKPOINTS[-1]:
            echo(describe(s.plan, name, "the plan as written (its checkpoints approved by --yes)"))
        return AFTER[name]
    echo(describe(s.plan, name))
    while True:
        answer = prompt(f"[{PROMPT}] > ")
        if answer is None:
            s.save()
            raise PlanPaused(f"no answer at checkpoint {name!r}; nothing was approved. "
                             f"Continue with: assay plan --resume {s.id}")
        action, calls = interpret(answer, ask=ask, tasks=[t.label for t in s.plan.tasks])
        record: dict[str, Any] = {"answer": answer, "model_calls": calls}
        if action is None:
            record["action"] = None
            record["result"] = "not understood; asked again"
            s.trace("checkpoint", checkpoint=name, answers=[record])
            s.save()
            echo(f"not understood: {answer!r}. Answer one of: {PROMPT}")
            continue
        record["action"] = action.to_dict()
        result = _apply(s, name, action, echo, ask)
        record["result"] = result
        s.trace("checkpoint", checkpoint=name, answers=[record])
        s.save()
        if result == "approved":
            return AFTER[name]
        if result.startswith("back:"):
            return result[5:]
        echo(result)
        echo(describe(s.plan, name))


def _apply(s: Any, name: str, action: Any, echo: Echo, ask: Any) -> str:
    if action.action == "approve":
        return "approved"
    if action.action == "back":
        if not s.state["history"]:
            return "nothing to go back to: this is the first checkpoint's first plan"
        last = s.state["history"].pop()
        s.state["plan"] = last["plan"]
        return f"back:{last['stage']}"
    if action.action == "edit":
        return _edit(s, echo) or "edited"
    plan = s.plan
    if action.action == "drop":
        idx = [_find_task(plan, t) for t in action.targets]
        missing = [t for t, i in zip(action.targets, idx, strict=True) if i is None]
        if missing:
            return (f"not in the plan: {', '.join(missing)}; the tasks are "
                    f"{', '.join(t.label for t in plan.tasks) or 'none'}")
        dropped = [plan.tasks[i].label for i in idx if i is not None]
        plan.tasks = [t for i, t in enumerate(plan.tasks) if i not in set(idx)]
        s.set_plan(plan, remember=True)
        return f"dropped {', '.join(dropped)}"
    added = []
    for target in action.targets:
        if _find_task(plan, target) is not None and not target.lower().startswith("hub:"):
            return f"{target} is already in the plan"
        task = _new_task(s, target, name, ask)
        if isinstance(task, str):
            return task
        added.append(task)
    s.set_plan(plan.model_copy(update={"tasks": [*plan.tasks, *added]}), remember=True)
    return f"added {', '.join(t.label for t in added)}"
