"""The click groups every command module registers on.

Sub-commands are loaded lazily: ``assay run qa`` imports ``assay.cli.run`` and what it
needs, so ``assay --help`` starts in the time it takes to import click.
"""

from __future__ import annotations

import click

from assay.cli.lazy import LazyGroup
from assay.core.version import __version__

STATE = {"debug": False}


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"assay {__version__}")
        ctx.exit()


def _lazy(**commands: tuple[str, str]) -> dict[str, tuple[str, str]]:
    return commands


@click.group(
    cls=LazyGroup,
    lazy=_lazy(
        run=("assay.cli.run:run_group", "Run a task against a model or agent."),
        report=("assay.cli.report:report",
                "Regenerate report.md, report.html and results.jsonl for a run (RUN_ID: its id "
                "or a unique prefix) from the store; with --summary, the one-page summary "
                "instead."),
        score=("assay.cli.report:score",
               "Score a run's stored outcomes again (RUN_ID: its id or a unique prefix), with "
               "no call to the model under test, as a new run linked to it; a judged task's "
               "judge is asked again (from the response cache when it is the same judge)."),
        compare=("assay.cli.compare:compare",
                 "Compare run B against run A on the samples they share (ids or unique "
                 "prefixes)."),
        history=("assay.cli.compare:history",
                 "The primary metric of every run of TASK over time, with 95% intervals; flags "
                 "significant drops between a model's consecutive runs."),
        review=("assay.cli.datagen:review",
                "Human review page on 127.0.0.1: scores, status, comments; every submission "
                "saved."),
        plan=("assay.cli.plan:plan",
              "Plan an evaluation from one sentence: the request is structured, the gallery is "
              "searched (and the Hub, when online), each task is resolved and given its "
              "metrics, with a checkpoint after the plan, the resolution and the metrics, "
              "where you approve, edit ($EDITOR), drop TASK, add TASK or go back."),
        view=("assay.cli.view:view",
              "Browse runs, metrics and every sample's transcript in a local web page.")),
    help="Evaluate LLM agents and LLMs honestly: official scorers, confidence intervals, "
    "runs that resume. Start with: assay run qa --data examples/qa_example.jsonl --model local",
    context_settings={"help_option_names": ["--help"]},
)
@click.option("--version", is_flag=True, callback=_version, expose_value=False, is_eager=True,
              help="Print the version and exit.")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def app(debug: bool) -> None:
    """assay: evaluate LLM agents and LLMs."""
    STATE["debug"] = debug


def _group(name: str, help: str, lazy: dict[str, tuple[str, str]]) -> LazyGroup:  # noqa: A002
    group = LazyGroup(name, help=help, lazy=lazy)
    app.add_command(group)
    return group


list_app = _group("list", "List runs, tasks, metrics or model providers.", _lazy(
    runs=("assay.cli.listing:list_runs", "Recent runs in the workspace store."),
    tasks=("assay.cli.listing:list_tasks",
           "Tasks that can be run by name, with their source (built-in, plugin or gallery), "
           "then the gallery's entries with category, size, data source, readiness and "
           "whether their data is cached; with FILES, the tasks those .py or .yaml files "
           "declare."),
    models=("assay.cli.listing:list_models",
            "Model providers (the ``assay.models`` entry points, plugins included) and how to "
            "name them."),
    metrics=("assay.cli.metrics_cmd:metrics",
             "Metrics that tasks and plans can name: name, aliases, level, dimension, category "
             "and what each measures (the first sentence; --json gives the full description "
             "and usage).")))
data_app = _group("data", "Fetch official datasets into the workspace cache.", _lazy(
    pull=("assay.cli.data:pull",
          "Fetch a task's data (NAME: a task, as 'assay list tasks' shows, or a data source a "
          "task declares, such as math500) without installing the package it ships in or its "
          "dependencies."),
    list=("assay.cli.data:list_data",
          "What the data cache holds, from its manifest: each item's files, size, version, "
          "SHA-256 and origin.")))
datagen_app = _group(
    "datagen", "Generated-data quality: generate, judge, win rate, verify, or all in one "
    "pipeline.", _lazy(
        generate=("assay.cli.datagen:generate", "Generate AIME-style problems; failures are "
                  "recorded, never written as problems."),
        judge=("assay.cli.datagen:judge", "Rubric-judge problems (four anchored 1-5 "
               "dimensions); invalid verdicts never score."),
        winrate=("assay.cli.datagen:winrate", "Pairwise win rate against real problems, judged "
                 "in both orders (by a jury when --judge-model is repeated: every judge votes "
                 "on every order)."),
        verify=("assay.cli.datagen:verify", "Solve each problem with solver models and check "
                "the stated answers (math-verify)."),
        pipeline=("assay.cli.datagen:pipeline", "Generate, judge, compare with real problems, "
                  "verify answers; one comprehensive report.")))
bfcl_app = _group("bfcl", "BFCL tools that need no model: score existing result files.",
                  _lazy(score=("assay.cli.bfcl:score",
                               "Score official-format result files without running a model.")))
gaia_app = _group("gaia", "GAIA tools that need no model: score existing answers.",
                  _lazy(score=("assay.cli.gaia:score",
                               "Score existing answers without running a model.")))
