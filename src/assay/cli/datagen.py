"""``assay datagen ...`` and ``assay review``: generated-data quality. Model steps are ordinary
runs; ``--delay SECONDS`` (the book's spelling) means ``--rpm 60/SECONDS``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from assay.cli.common import resume_overrides, sigterm_as_interrupt
from assay.core.checks import check_number
from assay.engine.runner import RunSpec
from assay.errors import ConfigError
from assay.pipelines.datagen import resume_pipeline, start_pipeline
from assay.pipelines.parent import metrics_of, resume_step, run_step
from assay.reports.render import fmt_value as _fmt
from assay.review.page import ReviewPage
from assay.store.sqlite import Store
from assay.tasks.datagen.families import self_preference_warning
from assay.tasks.datagen.generate import write_outputs
from assay.tasks.datagen.jury import jury_summary
from assay.tasks.datagen.problem import load_problems
from assay.tasks.datagen.references import load_reference
from assay.tasks.datagen.verify import near_duplicates, verification_summary
from assay.web.server import launch

_DEFAULTS = {name: f.default for name, f in RunSpec.__dataclass_fields__.items()}


model_option = click.option("--model", "-m", default="local", show_default=True,
                            help="Generator model spec.")
judge_option = click.option("--judge-model", multiple=True,
                            help="Judge model spec; repeat for a jury (scores averaged, "
                            "agreement reported). Use a different family than the generator.")
judge_samples_option = click.option("--judge-samples", type=click.IntRange(1, 15), default=1,
                                    show_default=True, help="Verdicts asked per judge (more "
                                    "than one: sampled at temperature 0.7 and combined).")
solver_option = click.option("--solver-model", multiple=True,
                             help="Solver model spec for answer verification; repeatable.")
delay_option = click.option("--delay", type=float, default=None,
                            help="Seconds between call starts: the same as --rpm 60/SECONDS.")
#: the problems file every datagen command but generate reads (its docstring says which)
data_argument = click.argument("data", type=click.Path(path_type=Path))


def engine_options(f):  # noqa: ANN001, ANN201
    """The engine settings of every datagen step, with ``assay run``'s defaults."""
    f = click.option("--quiet", "-q", is_flag=True, help="No progress bars.")(f)
    f = click.option("--no-cache", is_flag=True,
                     help="Bypass the response cache (neither read nor write).")(f)
    f = click.option("--rpm", type=float, default=None,
                     help="At most this many model calls start per minute; starts are "
                     "spaced evenly.")(f)
    f = click.option("--max-retries", type=int, default=_DEFAULTS["max_retries"],
                     show_default=True,
                     help="Retries per call on 429/5xx/timeouts/connection errors.")(f)
    f = click.option("--timeout", type=float, default=_DEFAULTS["timeout"], show_default=True,
                     help="Seconds before one model call times out.")(f)
    f = click.option("--max-connections", "-c", type=int, default=_DEFAULTS["max_connections"],
                     show_default=True, help="Concurrent model calls (and samples in "
                     "flight).")(f)
    return click.option("--base-url", default=None,
                        help="Endpoint for openai/ models (default $OPENAI_BASE_URL).")(f)


def rpm_of(rpm: float | None, delay: float | None) -> float | None:
    """The engine's ``rpm`` from ``--rpm`` or the book's ``--delay SECONDS``."""
    check_number("--delay", delay, minimum=0)
    if delay is None or delay == 0:
        return rpm
    if rpm is not None:
        raise ConfigError("give --rpm or --delay, not both (--delay S is --rpm 60/S)")
    return 60.0 / delay


def engine_of(o: dict[str, Any], seed: int | None = None, delay: float | None = None
              ) -> dict[str, Any]:
    """The RunSpec settings of a step from its :func:`engine_options` (validated now)."""
    settings = {"base_url": o["base_url"], "max_connections": o["max_connections"],
                "timeout": o["timeout"], "max_retries": o["max_retries"],
                "cache": not o["no_cache"], "rpm": rpm_of(o["rpm"], delay), "seed": seed}
    RunSpec(task="-", **settings)  # one-line errors for bad numbers, before any work
    return settings


def _resume_overrides(ctx: click.Context, delay: float | None, rpm: float | None) -> dict[str, Any]:
    """What a ``--resume`` changes, as ``assay run --resume`` (what would change the samples
    is refused with a one-line error)."""
    given = {k: v for k, v in ctx.params.items() if k not in ("out", "delay")}
    overrides: dict[str, Any] = resume_overrides(ctx, given)
    if delay:
        overrides["rpm"] = rpm
    return overrides


@click.command("generate")
@click.option("--n", "n", type=int, default=30, show_default=True, help="How many problems.")
@model_option
@click.option("--reference", default=None,
              help="Style examples: a JSON/JSONL file, an HF id, 'math500' or 'none' (default: "
              "past AIME problems, 1983-2025, from the Hub; MATH-500 when offline).")
@click.option("--out", type=click.Path(path_type=Path),
              default=Path("generated_problems.jsonl"), show_default=True,
              help="Where to write the problems (.json or .jsonl).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed for reference and topic choice (also sent as the sampling seed).")
@click.option("--resume", default=None, help="Continue an interrupted generation run by id.")
@delay_option
@engine_options
@click.pass_context
def generate(ctx: click.Context, n: int, model: str, reference: str | None, out: Path,
             seed: int, resume: str | None, delay: float | None, quiet: bool,
             **options: Any) -> None:
    """Generate AIME-style problems.

    Failures are recorded in the run, never written as problems.
    """
    engine = engine_of(options, seed, delay)
    store = Store()
    try:
        if resume:
            overrides = _resume_overrides(ctx, delay, engine["rpm"])
            run_id = resume_step(store, resume, quiet=quiet, overrides=overrides)
        else:
            run_id = run_step(store, "datagen_generate", model,
                              {"n": n, "reference": reference, "seed": seed}, engine=engine,
                              quiet=quiet)
        outputs = write_outputs(store, run_id, out)
    finally:
        store.close()
    click.echo(f"run {run_id}: {outputs['n_problems']} problems -> {outputs['problems']}; "
               f"{outputs['n_failures']} failures -> {outputs['failures']}")


def _generator_of(data: Path) -> str | None:
    """The generator each problem recorded in its provenance, when there is one."""
    models = {p.provenance.get("model") for p in load_problems(data)} - {None}
    return models.pop() if len(models) == 1 else None


@click.command("judge")
@data_argument
@judge_option
@judge_samples_option
@click.option("--rubric", default=None, help="Custom rubric YAML.")
@click.option("--generator-model", default=None,
              help="The model that generated the data (default: from its provenance).")
@engine_options
def judge(data: Path, judge_model: tuple[str, ...], judge_samples: int, rubric: str | None,
          generator_model: str | None, quiet: bool, **options: Any) -> None:
    """Rubric-judge problems on four anchored 1-5 dimensions.

    An invalid verdict never scores.

    DATA: a problems file, JSON or JSONL, as 'assay datagen generate' writes it.
    """
    engine = engine_of(options)
    judges = list(judge_model) or ["local"]
    generator_model = generator_model or _generator_of(data)
    warning = self_preference_warning(generator_model, judges)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    store = Store()
    try:
        run_ids = [run_step(store, "datagen_judge", jm,
                            {"data": str(data), "rubric": rubric,
                             "generator_model": generator_model,
                             "judge_samples": judge_samples}, engine=engine, quiet=quiet)
                   for jm in judges]
        for jm, rid in zip(judges, run_ids, strict=True):
            m = metrics_of(store, rid)
            click.echo(f"{jm}: run {rid} overall mean {_fmt(m.get('overall_mean'))}, pass rate "
                       f"{_fmt(m.get('pass_rate'))}, invalid {m.get('n_invalid', 0)}")
        if len(run_ids) > 1:
            jury = jury_summary([(jm, store.results(r, transcripts=False))
                                 for jm, r in zip(judges, run_ids, strict=True)],
                                generator_model=generator_model)
            click.echo(f"jury mean {_fmt(jury['jury']['overall_mean'])}, mean kappa "
                       f"{_fmt(jury['mean_kappa'])}")
    finally:
        store.close()


@click.command("winrate")
@data_argument
@click.option("--reference", type=click.Path(path_type=Path), required=True,
              help="Real problems to compare with.")
@judge_option
@judge_samples_option
@click.option("--seed", type=int, default=0, show_default=True, help="Pairing seed (recorded).")
@click.option("--n-comparisons", type=int, default=None, help="Pairs to judge.")
@engine_options
def winrate(data: Path, reference: Path, judge_model: tuple[str, ...], judge_samples: int,
            seed: int, n_comparisons: int | None, quiet: bool, **options: Any) -> None:
    """Pairwise win rate against real problems, judged in both orders.

    A jury when --judge-model is repeated: every judge votes on every order.

    DATA: a problems file, JSON or JSONL, as 'assay datagen generate' writes it.
    """
    engine = engine_of(options, seed)
    judges = list(judge_model) or ["local"]
    store = Store()
    try:  # the run's model is the first judge; the judges are the task's jury
        rid = run_step(store, "datagen_winrate", judges[0],
                       {"data": str(data), "reference": str(reference), "seed": seed,
                        "n_comparisons": n_comparisons, "judge_model": judges,
                        # every model named here is served at --base-url
                        "judge_base_url": options["base_url"], "judge_samples": judge_samples},
                       engine=engine, quiet=quiet)
        m = metrics_of(store, rid)
    finally:
        store.close()
    click.echo(f"run {rid}: win rate {_fmt(m.get('win_rate_adjusted'))}, position "
               f"inconsistency {_fmt(m.get('position_inconsistency_rate'))}")


@click.command("verify")
@data_argument
@solver_option
@click.option("--reference", default=None, help="Also flag near-duplicates of this reference set.")
@engine_options
def verify(data: Path, solver_model: tuple[str, ...], reference: str | None, quiet: bool,
           **options: Any) -> None:
    """Check each problem's stated answer by solving it (math-verify).

    Solver models (--solver-model) solve each problem; math-verify compares their
    answers with the stated one.

    DATA: a problems file, JSON or JSONL, as 'assay datagen generate' writes it.
    """
    engine = engine_of(options)
    solvers = list(solver_model) or ["local"]
    store = Store()
    try:
        run_ids = [run_step(store, "datagen_verify", sm, {"data": str(data)}, engine=engine,
                            quiet=quiet) for sm in solvers]
        summary = verification_summary([(sm, store.results(r, transcripts=False))
                                        for sm, r in zip(solvers, run_ids, strict=True)])
    finally:
        store.close()
    click.echo(f"answers reproduced by at least one solver: {_fmt(summary['any_solver_agrees'])}")
    if summary["unreproduced"]:
        click.echo(f"flagged (no solver agrees): {', '.join(summary['unreproduced'])}")
    if reference:
        refs, _ = load_reference(reference)
        dups = near_duplicates(load_problems(data), refs)
        click.echo(f"near-duplicates of the reference set: {len(dups)}")
        for d in dups:
            click.echo(f"  {d['problem_id']} ~ {d['reference_id']} ({d['overlap']:.0%})")


@click.command("pipeline")
@click.option("--n", "n", type=int, default=30, show_default=True,
              help="How many problems to generate.")
@model_option
@judge_option
@solver_option
@click.option("--reference", default=None,
              help="Reference set (file, HF id, 'math500'); default past AIME problems, "
              "1983-2025, from the Hub; MATH-500 when offline.")
@click.option("--rubric", default=None, help="Custom rubric YAML.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed for generation and pairing (also sent as the sampling seed).")
@click.option("--resume", default=None,
              help="Continue an interrupted pipeline by id: finished steps are kept, an "
              "interrupted step sends no finished item again.")
@delay_option
@engine_options
@click.pass_context
def pipeline(ctx: click.Context, n: int, model: str, judge_model: tuple[str, ...],
             solver_model: tuple[str, ...], reference: str | None, rubric: str | None,
             seed: int, resume: str | None, delay: float | None, quiet: bool,
             **options: Any) -> None:
    """Generate, judge, compare and verify, with one report.

    The pipeline is a run in the store and each step a run of its own (its child);
    after Ctrl-C or a crash, --resume ID continues it.
    """
    rpm = rpm_of(options["rpm"], delay)
    store = Store()
    started: list[str] = [resume] if resume else []
    try:
        with sigterm_as_interrupt():
            if resume:
                overrides = _resume_overrides(ctx, delay, rpm)
                record = resume_pipeline(store, resume, overrides=overrides, quiet=quiet)
            else:
                judges = list(judge_model) or ["local"]
                warning = self_preference_warning(model, judges)
                if warning:
                    click.echo(f"warning: {warning}", err=True)
                engine = engine_of(options, seed, delay)
                record = start_pipeline(store, model=model, engine=engine, quiet=quiet, n=n,
                                        judge_models=judges, solver_models=list(solver_model),
                                        reference=reference, rubric=rubric, seed=seed,
                                        on_created=started.append)
    except KeyboardInterrupt:
        click.echo("interrupted; finished steps are saved."
                   + (f" Resume with: assay datagen pipeline --resume {started[0]}"
                      if started else ""), err=True)
        raise SystemExit(130) from None
    finally:
        store.close()
    for note in record.get("notes") or []:
        click.echo(f"note: {note}")
    out = record.get("outputs") or {}
    click.echo(f"pipeline {record['id']}: {out.get('n_problems', 0)} problems, "
               f"{out.get('n_failures', 0)} failed generations")
    for kind, path in (record.get("reports") or {}).items():
        click.echo(f"{kind}: {path}")


@click.command("review")
@data_argument
@click.option("--reviewer", default=None, help="Your reviewer name.")
@click.option("--port", type=int, default=0, show_default=True,
              help="Port on 127.0.0.1 (0: any free port).")
@click.option("--judge-scores", default=None, help="JSON of judge scores to show beside each item.")
@click.option("--blind/--no-blind", default=False, help="Hide judge scores until you submit.")
@click.option("--no-browser", is_flag=True, help="Do not open a browser.")
def review(data: Path, reviewer: str | None, port: int, judge_scores: str | None, blind: bool,
           no_browser: bool) -> None:
    """Review problems by hand in a local web page.

    Scores, status and comments per problem, on 127.0.0.1; every submission is saved.

    DATA: a problems file, JSON or JSONL, as 'assay datagen generate' writes it; the
    reviews are kept in the workspace store and exported beside it (for problems.jsonl:
    problems_verifications.json).
    """
    if not data.is_file():
        raise ConfigError(f"problems file not found: {data}")
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be 0-65535 (0 picks a free port), got {port}")
    launch(review=ReviewPage.from_file(data, reviewer, judge_scores=judge_scores, blind=blind),
           port=port, open_browser=not no_browser, echo=click.echo)
