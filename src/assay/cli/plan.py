"""``assay plan REQUEST`` and ``assay run PLAN.yaml``."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import click

from assay.cli.columns import echo_wrapped
from assay.cli.common import (
    SHARED_NAMES,
    SHARED_OPTIONS,
    agent_models,
    engine_options,
    resume_overrides,
)
from assay.errors import ConfigError
from assay.metrics.format import counted
from assay.pipelines.plan import resume_plan, start_plan
from assay.plan.planner import PlanPaused, Settings, plan_request, resume_session
from assay.plan.schema import is_plan_file, read_plan  # noqa: F401 - assay run asks it
from assay.reports.models import test_line
from assay.reports.render import fmt_value
from assay.store.sqlite import Store


def _no_input() -> bool:
    """Whether standard input can never answer a checkpoint: closed, a device that is not a
    terminal (``< /dev/null``) or an empty file. A pipe may carry answers: it is read."""
    if sys.stdin is None:
        return True
    try:
        if sys.stdin.isatty():
            return False
        mode = os.fstat(sys.stdin.fileno())
    except (OSError, ValueError):
        return True
    return stat.S_ISCHR(mode.st_mode) or (stat.S_ISREG(mode.st_mode) and mode.st_size == 0)


def _prompt(text: str) -> str | None:
    """One answer from the terminal; ``None`` at the end of input (never an approval)."""
    click.echo(text, nl=False)
    line = sys.stdin.readline()
    if not line:
        click.echo("")
        return None
    return line.rstrip("\n")


@click.command("plan")
@click.argument("request", required=False)
@click.option("--model", "-m", default="local", show_default=True,
              help="The model or agent the plan will evaluate (recorded in the plan).")
@click.option("--planner-model", default=None,
              help="The model that structures the request and reads free-text answers "
              "(local: the embedded model; openai/<model>). Default: rules only, no model.")
@click.option("--judge-model", default=None, help="A judge for tasks that need one.")
@click.option("--base-url", default=None, help="Endpoint of an openai/ planner model (and "
              "of --embeddings).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("plan.yaml"), show_default=True, help="Where to write the plan.")
@click.option("--yes", "-y", is_flag=True, help="Approve every checkpoint (for CI).")
@click.option("--no-hub", is_flag=True, help="Never search the Hugging Face Hub.")
@click.option("--embeddings", default=None, metavar="MODEL",
              help="Mix dense retrieval into BM25: an embedding model at an "
              "OpenAI-compatible /embeddings endpoint (--base-url).")
@click.option("--resume", default=None, metavar="ID",
              help="Continue a planning session at the checkpoint where it stopped.")
def plan(request: str | None, model: str, planner_model: str | None, judge_model: str | None,
         base_url: str | None, output: Path, yes: bool, no_hub: bool,
         embeddings: str | None, resume: str | None) -> None:
    """Plan an evaluation from one sentence, with checkpoints.

    The request is structured, the gallery is searched (and the Hub, when online), each
    task is resolved and given its metrics, with a checkpoint after the plan, the
    resolution and the metrics, where you approve, edit ($EDITOR), drop TASK, add TASK or
    go back. The plan is a YAML file; run it with: assay run plan.yaml --model M."""
    if not yes and _no_input():
        # nothing could ever be approved: say so at once, never plan and wait for nothing
        raise ConfigError("standard input gives no answers (closed, /dev/null or empty), so "
                          "no checkpoint can be approved: pass --yes to approve all three and "
                          "write the plan (-o FILE says where; nothing is run)")
    store = Store()
    try:
        if resume:
            if request:
                raise ConfigError("--resume continues a session with its own request; give "
                                  "either REQUEST or --resume ID")
            path = resume_session(store, resume, prompt=_prompt, echo=echo_wrapped, yes=yes,
                                  base_url=base_url)
        else:
            if not request:
                raise ConfigError('say what to evaluate: assay plan "tool calling and '
                                  'grade-school math" (or --resume ID)')
            settings = Settings(model=model, planner=planner_model, judge=judge_model,
                                output=str(output), hub=False if no_hub else None,
                                base_url=base_url, embeddings=embeddings)
            path = plan_request(store, request, settings, prompt=_prompt, echo=echo_wrapped,
                                yes=yes, on_created=lambda sid: click.echo(
                                    f"planning session {sid}"))
    except PlanPaused as e:
        click.echo(f"paused: {e}", err=True)
        raise SystemExit(3) from None
    except KeyboardInterrupt:
        click.echo("interrupted; the session is saved: assay plan --resume ID "
                   "(see 'assay list runs')", err=True)
        raise SystemExit(130) from None
    finally:
        store.close()
    written = read_plan(path)
    kept = [s for s in written.trace if s.get("step") == "write"]
    if kept:
        click.echo(f"the plan that was at {path} is kept as {kept[-1]['outputs']['kept_as']}")
    click.echo(f"plan written to {path}: {counted(len(written.tasks), 'task')} "
               f"({', '.join(t.label for t in written.tasks) or 'none'})")
    click.echo(f"run it with: assay run {path} --model {written.models.model}")


def plan_command(path: str) -> click.Command:
    """``assay run PLAN.yaml``: the plan's tasks as child runs of one parent run."""
    def callback(**kwargs: Any) -> None:
        ctx = click.get_current_context()
        given_model = getattr(ctx.get_parameter_source("model"), "name", "") in (
            "COMMANDLINE", "ENVIRONMENT")
        store = Store()
        try:
            if kwargs.get("resume"):
                overrides = resume_overrides(ctx, {k: kwargs[k] for k in SHARED_NAMES})
                done = resume_plan(store, kwargs["resume"], path=path, overrides=overrides,
                                   quiet=kwargs["quiet"], echo=echo_wrapped)
            else:
                eng = {k: kwargs[k] for k in SHARED_NAMES if k not in ("resume", "quiet")}
                eng["param"] = list(eng["param"] or ())
                if not given_model:  # the plan's model, driven by --agent where given
                    eng["model"] = [read_plan(path).models.model]
                with_agent = eng.get("agent") is not None
                models = agent_models(eng)
                settings = engine_options(**eng)
                done = start_plan(store, path, model=models if given_model or with_agent
                                  else None,
                                  engine=settings, quiet=kwargs["quiet"], echo=echo_wrapped,
                                  on_created=lambda pid: click.echo(f"plan run {pid}"))
        except KeyboardInterrupt:
            click.echo(f"interrupted; finished tasks are saved. Resume with: assay run {path} "
                       "--resume <plan run id> (see 'assay list runs')", err=True)
            raise SystemExit(130) from None
        finally:
            store.close()
        summary = done.summary
        parts = summary.get("per_model") or [summary]
        made = sum(1 for c in done.children if c)
        click.echo(f"plan run {done.run_id}: {made} of {counted(len(done.children), 'task')} "
                   "run" if len(parts) == 1 else
                   f"plan run {done.run_id}: {made} of {counted(len(done.children), 'run')} "
                   f"made ({counted(len(done.children) // len(parts), 'task')} on "
                   f"{len(parts)} models)")
        for part in parts:
            if len(parts) > 1:
                click.echo(f"{part['model']}:")
            for row in part.get("tasks", []):
                value = row.get("value")
                shown = fmt_value(value) if value is not None else row.get("status", "not run")
                metric = row.get("metric_key") or row.get("primary")
                instead = (f" (not the plan's {row.get('primary')}: {row.get('label')} does "
                           "not compute it)" if row.get("primary_computed") is False else "")
                click.echo(f"  {row.get('label')}: {metric} {shown}{instead}")
        if summary.get("comparisons") and not summary.get("n_tests"):
            echo_wrapped("no paired test: on no task do two models have a value")
        elif summary.get("comparisons"):
            echo_wrapped("paired tests on the samples both scored (second model minus first; "
                         f"Holm across the plan's {counted(summary['n_tests'], 'test')}):")
            for c in summary["comparisons"]:
                for pair in c["pairs"] or [{}]:
                    echo_wrapped(f"  {c['task']}: " + (test_line(pair) if pair else
                                                       "no pair to test"))
        failed = [(part["model"] + ": " if len(parts) > 1 else "") + str(row.get("label"))
                  for part in parts for row in part.get("tasks", [])
                  if row.get("status") == "failed"]
        for k, err in done.failures.items():
            click.echo(f"  task {k // len(parts) + 1}"
                       + (f" on {parts[k % len(parts)]['model']}" if len(parts) > 1 else "")
                       + f" failed: {err}", err=True)
        for label in failed:
            click.echo(f"  {label}: the run failed (see 'assay report' on it)", err=True)
        for kind, p in done.reports.items():
            click.echo(f"{kind}: {p}")
        if done.failures or failed:
            click.echo(f"nothing is lost: fix the cause, then assay run {path} --resume "
                       f"{done.run_id}", err=True)
            raise SystemExit(1)

    return click.Command(path, callback=callback, params=list(SHARED_OPTIONS),
                         help=f"Run the plan {path}: every task as a child run of one "
                         "parent run, then one combined report. --model overrides the "
                         "plan's model (repeated: every task on each model, with paired "
                         "tests at the end); --limit caps every task; --resume ID "
                         "continues.")
