"""``assay datagen ...`` and ``assay review``: generated-data quality."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.app import app, datagen_app
from assay.errors import ConfigError

ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Generator model spec.")]
JudgeOpt = Annotated[list[str] | None, typer.Option(
    "--judge-model", help="Judge model spec; repeat for a jury (scores averaged, agreement "
    "reported). Use a different family than the generator.")]
SolverOpt = Annotated[list[str] | None, typer.Option(
    "--solver-model", help="Solver model spec for answer verification; repeatable.")]
BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", help="Endpoint for openai/ models (default $OPENAI_BASE_URL).")]
ConnOpt = Annotated[int, typer.Option("--max-connections", "-c", help="Concurrent calls.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")]


def _step(base_url: str | None, max_connections: int, quiet: bool, seed: int | None = None):  # noqa: ANN202
    from assay.datagen.pipeline import StepOptions

    return StepOptions(base_url=base_url, max_connections=max_connections, quiet=quiet,
                       seed=seed)


def _store():  # noqa: ANN202
    from assay.store.sqlite import Store

    return Store()


@datagen_app.command("generate")
def generate(
    n: Annotated[int, typer.Option("--n", help="How many problems.")] = 30,
    model: ModelOpt = "local",
    reference: Annotated[str | None, typer.Option(
        help="Style examples: a JSON/JSONL file, an HF id, 'math500' or 'none' (default: the "
        "book's AIME set, MATH-500 when offline).")] = None,
    out: Annotated[Path, typer.Option(help="Where to write the problems (.json or .jsonl).")]
    = Path("generated_problems.jsonl"),
    seed: Annotated[int, typer.Option(help="Seed for reference and topic choice.")] = 0,
    delay: Annotated[float, typer.Option(help="Seconds between calls (rate limit).")] = 0.0,
    resume: Annotated[str | None, typer.Option(
        help="Continue an interrupted generation run by id.")] = None,
    base_url: BaseUrlOpt = None,
    max_connections: ConnOpt = 4,
    quiet: QuietOpt = False,
) -> None:
    """Generate AIME-style problems; failures are recorded, never written as problems."""
    from assay.datagen.generate import write_outputs
    from assay.datagen.pipeline import run_step

    store = _store()
    try:
        if resume:
            from assay.engine.loop import run as run_loop
            from assay.engine.runner import Engine

            run_id = run_loop(Engine(store, quiet=quiet).run(None, resume=resume))
        else:
            run_id = run_step(store, "datagen_generate", model,
                              {"n": n, "reference": reference, "seed": seed, "delay": delay},
                              _step(base_url, max_connections, quiet, seed))
        outputs = write_outputs(store, run_id, out)
    finally:
        store.close()
    typer.echo(f"run {run_id}: {outputs['n_problems']} problems -> {outputs['problems']}; "
               f"{outputs['n_failures']} failures -> {outputs['failures']}")


@datagen_app.command("judge")
def judge(
    data: Annotated[Path, typer.Argument(help="Problems file to judge.")],
    judge_model: JudgeOpt = None,
    rubric: Annotated[str | None, typer.Option(help="Custom rubric YAML.")] = None,
    generator_model: Annotated[str | None, typer.Option(
        help="The model that generated the data (default: from its provenance).")] = None,
    base_url: BaseUrlOpt = None,
    max_connections: ConnOpt = 4,
    quiet: QuietOpt = False,
) -> None:
    """Rubric-judge problems (four anchored 1-5 dimensions); invalid verdicts never score."""
    from assay.datagen.judge import self_preference_warning
    from assay.datagen.pipeline import judge as run_judge
    from assay.datagen.pipeline import metrics_of
    from assay.datagen.problem import load_problems

    judges = judge_model or ["local"]
    if generator_model is None:  # the generator recorded itself in each problem's provenance
        models = {p.provenance.get("model") for p in load_problems(data)} - {None}
        generator_model = models.pop() if len(models) == 1 else None
    warning = self_preference_warning(generator_model, judges)
    if warning:
        typer.echo(f"warning: {warning}", err=True)
    store = _store()
    try:
        run_ids, jury = run_judge(store, data, judges, rubric=rubric,
                                  generator_model=generator_model,
                                  step=_step(base_url, max_connections, quiet))
        for jm, rid in zip(judges, run_ids, strict=True):
            m = metrics_of(store, rid)
            typer.echo(f"{jm}: run {rid} overall mean {_fmt(m.get('overall_mean'))}, pass rate "
                       f"{_fmt(m.get('pass_rate'))}, invalid {m.get('n_invalid', 0)}")
        if jury:
            typer.echo(f"jury mean {_fmt(jury.get('jury_overall_mean') or jury.get('overall_mean'))}")
    finally:
        store.close()


def _fmt(v) -> str:  # noqa: ANN001
    from assay.reports.render import fmt_value

    return fmt_value(v)


@datagen_app.command("winrate")
def winrate(
    data: Annotated[Path, typer.Argument(help="Generated problems.")],
    reference: Annotated[Path, typer.Option(help="Real problems to compare with.")],
    judge_model: JudgeOpt = None,
    seed: Annotated[int, typer.Option(help="Pairing seed (recorded).")] = 0,
    n_comparisons: Annotated[int | None, typer.Option(help="Pairs to judge.")] = None,
    base_url: BaseUrlOpt = None,
    max_connections: ConnOpt = 4,
    quiet: QuietOpt = False,
) -> None:
    """Pairwise win rate against real problems, judged in both orders."""
    from assay.datagen.pipeline import metrics_of, run_step

    store = _store()
    try:
        rid = run_step(store, "datagen_winrate", (judge_model or ["local"])[0],
                       {"data": str(data), "reference": str(reference), "seed": seed,
                        "n_comparisons": n_comparisons},
                       _step(base_url, max_connections, quiet, seed))
        m = metrics_of(store, rid)
    finally:
        store.close()
    typer.echo(f"run {rid}: win rate {_fmt(m.get('win_rate_adjusted'))}, position "
               f"inconsistency {_fmt(m.get('position_inconsistency_rate'))}")


@datagen_app.command("verify")
def verify(
    data: Annotated[Path, typer.Argument(help="Generated problems.")],
    solver_model: SolverOpt = None,
    reference: Annotated[str | None, typer.Option(
        help="Also flag near-duplicates of this reference set.")] = None,
    base_url: BaseUrlOpt = None,
    max_connections: ConnOpt = 4,
    quiet: QuietOpt = False,
) -> None:
    """Solve each problem with solver models and check the stated answers (math-verify)."""
    from assay.datagen.pipeline import verify as run_verify
    from assay.datagen.problem import load_problems

    store = _store()
    try:
        _, summary = run_verify(store, data, solver_model or ["local"],
                                step=_step(base_url, max_connections, quiet))
    finally:
        store.close()
    typer.echo(f"answers reproduced by at least one solver: {_fmt(summary['any_solver_agrees'])}")
    if summary["unreproduced"]:
        typer.echo(f"flagged (no solver agrees): {', '.join(summary['unreproduced'])}")
    if reference:
        from assay.datagen.references import load_reference
        from assay.datagen.verify import near_duplicates

        refs, _ = load_reference(reference)
        dups = near_duplicates(load_problems(data), refs)
        typer.echo(f"near-duplicates of the reference set: {len(dups)}")
        for d in dups:
            typer.echo(f"  {d['problem_id']} ~ {d['reference_id']} ({d['overlap']:.0%})")


@datagen_app.command("pipeline")
def pipeline(
    n: Annotated[int, typer.Option("--n", help="How many problems to generate.")] = 30,
    model: ModelOpt = "local",
    judge_model: JudgeOpt = None,
    solver_model: SolverOpt = None,
    reference: Annotated[str | None, typer.Option(
        help="Reference set (file, HF id, 'math500'); default the book's AIME set, MATH-500 "
        "when offline.")] = None,
    rubric: Annotated[str | None, typer.Option(help="Custom rubric YAML.")] = None,
    seed: Annotated[int, typer.Option(help="Seed for generation and pairing.")] = 0,
    delay: Annotated[float, typer.Option(help="Seconds between generator calls.")] = 0.0,
    base_url: BaseUrlOpt = None,
    max_connections: ConnOpt = 4,
    quiet: QuietOpt = False,
) -> None:
    """Generate, judge, compare with real problems, verify answers; one comprehensive report."""
    from assay.datagen.judge import self_preference_warning
    from assay.datagen.pipeline import run_pipeline

    judges = judge_model or ["local"]
    warning = self_preference_warning(model, judges)
    if warning:
        typer.echo(f"warning: {warning}", err=True)
    record = run_pipeline(n=n, model=model, judge_models=judges, solver_models=solver_model,
                          reference=reference, rubric=rubric, seed=seed, delay=delay,
                          step=_step(base_url, max_connections, quiet, seed))
    for note in record.get("notes") or []:
        typer.echo(f"note: {note}")
    out = record.get("outputs") or {}
    typer.echo(f"pipeline {record['id']}: {out.get('n_problems', 0)} problems, "
               f"{out.get('n_failures', 0)} failed generations")
    for kind, path in (record.get("reports") or {}).items():
        typer.echo(f"{kind}: {path}")


@app.command("review")
def review(
    data: Annotated[Path, typer.Argument(help="Problems file to review.")],
    reviewer: Annotated[str | None, typer.Option(help="Your reviewer name.")] = None,
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free port).")] = 0,
    judge_scores: Annotated[str | None, typer.Option(
        help="JSON of judge scores to show beside each item.")] = None,
    blind: Annotated[bool, typer.Option(help="Hide judge scores until you submit.")] = False,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Do not open a browser.")]
    = False,
) -> None:
    """Human review page on 127.0.0.1: scores, status, comments; every submission saved.

    Bad data, a busy ``--port`` and the like are one-line errors (exit 2).
    """
    if not data.is_file():
        raise ConfigError(f"problems file not found: {data}")
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be 0-65535 (0 picks a free port), got {port}")
    from assay.datagen.review.app import launch

    launch(data, reviewer, port=port, open_browser=not no_browser,
           judge_scores=judge_scores, blind=blind, echo=typer.echo)
