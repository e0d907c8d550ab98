"""``assay run TASK``: any task, by name, ``FILE.py[@NAME]`` or ``FILE.yaml``; flags come from
its options model (an option named like an engine flag is given with ``-T`` only)."""

from __future__ import annotations

import importlib
import json
import typing
from typing import Any

import click

from assay.api import RunResult
from assay.cli.common import (
    SHARED_NAMES,
    SHARED_OPTIONS,
    agent_models,
    engine_options,
    execute_run,
    given_names,
    resume_overrides,
)
from assay.cli.lazy import LazyGroup
from assay.errors import ConfigError
from assay.tasks.options import field_kind, parse_assignments
from assay.tasks.registry import available, looks_like_file, resolve


def literal_values(annotation: Any) -> list[str]:
    """The values of a ``Literal[...]`` (or ``Literal[...] | None``) of strings, else []."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Literal:
        return [a for a in args if isinstance(a, str)]
    return literal_values(args[0]) if len(args) == 1 else []


def task_params(options_model: Any) -> list[click.Parameter]:
    """Click options for every field of a task's options model (a flag not given is not
    passed: defaults are the model's)."""
    params: list[click.Parameter] = []
    for name, info in options_model.model_fields.items():
        if name in SHARED_NAMES or name == "task_option":
            continue  # given with -T NAME=VALUE
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if extra.get("hidden"):
            continue  # set by the task's maker (a gallery entry's pulled files), not a flag
        help_text = info.description or ""
        default = info.default
        if default not in (None, False, "", [], {}) and "default" not in help_text:
            help_text += f"  [default: {default}]"
        kind, item = field_kind(info.annotation)
        dashed = name.replace("_", "-")
        decls = [f"--{dashed}", *extra.get("flags", []), name]
        kw: dict[str, Any] = {"type": item if kind == "scalar" else str}
        if kind == "scalar" and (values := literal_values(info.annotation)):
            kw["type"] = click.Choice(values)
        if kind == "flag" and extra.get("flag_only"):
            kw = {"is_flag": True}
        elif kind == "flag":
            kw, decls[0] = {}, f"--{dashed}/--no-{dashed}"
        elif kind == "multiple":
            kw, help_text = {"multiple": True, "type": item}, help_text + " (repeatable)"
        params.append(click.Option(decls, default=None, help=help_text, show_default=False, **kw))
    return params


class TaskCommand(click.Command):
    """A task's run command; a misspelt flag names the valid ones."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as e:
            valid = sorted(o for p in self.params for o in p.opts if o.startswith("--"))
            hint = f" (did you mean {', '.join(e.possibilities)}?)" if e.possibilities else ""
            raise click.UsageError(f"no such option {e.option_name}{hint}; valid options: "
                                   f"{', '.join(valid)}", ctx=ctx) from None


def task_command(text: str) -> click.Command:
    """The ``assay run`` command of the task ``text`` names."""
    ref = resolve(text)
    own = task_params(ref.Options)
    own_names = [p.name for p in own if p.name]
    json_fields = {n for n, info in ref.Options.model_fields.items()
                   if field_kind(info.annotation)[0] == "json"}

    def callback(**kwargs: Any) -> Any:
        ctx = click.get_current_context()
        given = given_names(ctx, own_names)
        options = {n: list(kwargs[n]) if isinstance(kwargs[n], tuple) else kwargs[n]
                   for n in own_names if n in given}
        for name in json_fields & set(options):
            options[name] = _json_value(name, options[name])
        assigned = parse_assignments(kwargs.pop("task_option") or ())
        both = sorted(set(options) & set(assigned))
        if both:
            raise ConfigError(f"{', '.join(both)} given both as a flag and with -T; give it once")
        options.update(assigned)
        overrides = None
        if kwargs.get("resume"):
            overrides = resume_overrides(ctx, {k: kwargs[k] for k in SHARED_NAMES})
            if options:  # only options whose credentials were never stored may come back;
                overrides["task_options"] = options  # api.resume_spec refuses the rest
        eng = {k: kwargs[k] for k in SHARED_NAMES}
        eng["param"] = list(eng["param"] or ())
        models = agent_models(eng)
        result = execute_run(
            ref.ref, resume=eng.pop("resume"), quiet=eng.pop("quiet"), model=models,
            engine_options=engine_options(**eng), task_options=options,
            overrides=overrides)
        after = getattr(ref.declared, "after_run", None)
        if after is not None and isinstance(result, RunResult):  # one model's run
            after(result, options)
        return result

    params = [*own,
              click.Option(["-T", "--task-option", "task_option"], multiple=True,
                           metavar="KEY=VALUE",
                           help="A task option (see above), VALUE read as JSON when it parses "
                           "(numbers, true/false, lists), else as text; repeatable."),
              *SHARED_OPTIONS]
    doc = (ref.declared.__doc__ or ref.description or "").strip()
    first = " ".join(doc.split("\n\n")[0].split())
    details = getattr(ref.declared, "details", None)  # a gallery entry's data and metrics
    more = f"\n\n{details}" if details else ""
    return TaskCommand(text, callback=callback, params=params,
                       help=f"{first}\n\nSource: {ref.source}.{more}",
                       short_help=ref.description or first)


def _json_value(name: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value  # the model's own validator may read it (bfcl --weights a=1,b=2)


class TaskGroup(LazyGroup):
    """``assay run``: every registered task is a sub-command, and so is any task file. Its
    help lists the options every task takes and the task names, importing no task."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(available())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name.endswith((".yaml", ".yml")):  # a plan file: its command loads lazily
            plans = importlib.import_module("assay.cli.plan")
            if plans.is_plan_file(cmd_name):
                return plans.plan_command(cmd_name)
        try:
            return task_command(cmd_name)
        except ConfigError as e:  # a task file's own error is about the file, not the usage
            raise click.UsageError(str(e), ctx=None if looks_like_file(cmd_name) else ctx
                                   ) from None

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        shared = [o.get_help_record(ctx) for o in SHARED_OPTIONS]
        with formatter.section("Options of every task"):
            formatter.write_dl([r for r in shared if r is not None])
        self.format_commands(ctx, formatter)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        steps = [n for n in names if n.startswith(STEP_PREFIX)]
        for title, group in ((f"Tasks ({len(names) - len(steps)})",
                              [n for n in names if n not in steps]),
                             ("Steps of 'assay datagen' (each runs alone too)", steps)):
            if group:
                with formatter.section(title):
                    formatter.write_text("  ".join(group))
        formatter.write_paragraph()
        formatter.write_text("'assay list tasks' describes each task; 'assay run TASK --help' "
                             "lists its own options.")


#: the tasks that are steps of the ``assay datagen`` pipeline, listed apart in the help
STEP_PREFIX = "datagen_"

run_group = TaskGroup(
    "run", help="Run a task against a model or agent: a task name (see 'assay list tasks'), "
    "FILE.py[@NAME] or FILE.yaml. Task options are flags (see 'assay run TASK --help') or "
    "-T KEY=VALUE. Results go to the workspace's store (assay.db) and reports to its "
    "runs/<run_id>/; the workspace is found as git finds .git: $ASSAY_HOME if set, else the "
    "nearest assay-runs/ holding assay.db in this folder or one above, else a new "
    "./assay-runs. Repeat --model to run the task once per model and compare them.",
    short_help="Run a task against a model or agent.", options_metavar="",
    subcommand_metavar="TASK [--model M] [--limit N] [OPTIONS]")
