"""``assay datagen ...`` and ``assay review``: generated-data quality."""

from __future__ import annotations

from pathlib import Path

import click

from assay.errors import ConfigError


def model_option(f):  # noqa: ANN001, ANN201
    return click.option("--model", "-m", default="local", show_default=True,
                        help="Generator model spec.")(f)


def judge_option(f):  # noqa: ANN001, ANN201
    return click.option("--judge-model", multiple=True,
                        help="Judge model spec; repeat for a jury (scores averaged, agreement "
                        "reported). Use a different family than the generator.")(f)


def solver_option(f):  # noqa: ANN001, ANN201
    return click.option("--solver-model", multiple=True,
                        help="Solver model spec for answer verification; repeatable.")(f)


def step_options(f):  # noqa: ANN001, ANN201
    """--base-url, --max-connections and --quiet, shared by every datagen step."""
    f = click.option("--quiet", "-q", is_flag=True, help="No progress bars.")(f)
    f = click.option("--max-connections", "-c", type=int, default=4, show_default=True,
                     help="Concurrent calls.")(f)
    return click.option("--base-url", default=None,
                        help="Endpoint for openai/ models (default $OPENAI_BASE_URL).")(f)


#: the problems file every datagen command but generate reads (its docstring says which)
data_argument = click.argument("data", type=click.Path(path_type=Path))


def _step(base_url: str | None, max_connections: int, quiet: bool, seed: int | None = None):  # noqa: ANN202
    from assay.datagen.pipeline import StepOptions

    return StepOptions(base_url=base_url, max_connections=max_connections, quiet=quiet,
                       seed=seed)


def _store():  # noqa: ANN202
    from assay.store.sqlite import Store

    return Store()


@click.command("generate")
@click.option("--n", "n", type=int, default=30, show_default=True, help="How many problems.")
@model_option
@click.option("--reference", default=None,
              help="Style examples: a JSON/JSONL file, an HF id, 'math500' or 'none' (default: "
              "the book's AIME set, MATH-500 when offline).")
@click.option("--out", type=click.Path(path_type=Path),
              default=Path("generated_problems.jsonl"), show_default=True,
              help="Where to write the problems (.json or .jsonl).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed for reference and topic choice.")
@click.option("--delay", type=float, default=0.0, show_default=True,
              help="Seconds between calls (rate limit).")
@click.option("--resume", default=None, help="Continue an interrupted generation run by id.")
@step_options
def generate(n: int, model: str, reference: str | None, out: Path, seed: int, delay: float,
             resume: str | None, base_url: str | None, max_connections: int,
             quiet: bool) -> None:
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
    click.echo(f"run {run_id}: {outputs['n_problems']} problems -> {outputs['problems']}; "
               f"{outputs['n_failures']} failures -> {outputs['failures']}")


@click.command("judge")
@data_argument
@judge_option
@click.option("--rubric", default=None, help="Custom rubric YAML.")
@click.option("--generator-model", default=None,
              help="The model that generated the data (default: from its provenance).")
@step_options
def judge(data: Path, judge_model: tuple[str, ...], rubric: str | None,
          generator_model: str | None, base_url: str | None, max_connections: int,
          quiet: bool) -> None:
    """Rubric-judge problems (four anchored 1-5 dimensions); invalid verdicts never score."""
    from assay.datagen.judge import self_preference_warning
    from assay.datagen.pipeline import judge as run_judge
    from assay.datagen.pipeline import metrics_of
    from assay.datagen.problem import load_problems

    judges = list(judge_model) or ["local"]
    if generator_model is None:  # the generator recorded itself in each problem's provenance
        models = {p.provenance.get("model") for p in load_problems(data)} - {None}
        generator_model = models.pop() if len(models) == 1 else None
    warning = self_preference_warning(generator_model, judges)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    store = _store()
    try:
        run_ids, jury = run_judge(store, data, judges, rubric=rubric,
                                  generator_model=generator_model,
                                  step=_step(base_url, max_connections, quiet))
        for jm, rid in zip(judges, run_ids, strict=True):
            m = metrics_of(store, rid)
            click.echo(f"{jm}: run {rid} overall mean {_fmt(m.get('overall_mean'))}, pass rate "
                       f"{_fmt(m.get('pass_rate'))}, invalid {m.get('n_invalid', 0)}")
        if jury:
            click.echo(f"jury mean {_fmt(jury.get('jury_overall_mean') or jury.get('overall_mean'))}")
    finally:
        store.close()


def _fmt(v) -> str:  # noqa: ANN001
    from assay.reports.render import fmt_value

    return fmt_value(v)


@click.command("winrate")
@data_argument
@click.option("--reference", type=click.Path(path_type=Path), required=True,
              help="Real problems to compare with.")
@judge_option
@click.option("--seed", type=int, default=0, show_default=True, help="Pairing seed (recorded).")
@click.option("--n-comparisons", type=int, default=None, help="Pairs to judge.")
@step_options
def winrate(data: Path, reference: Path, judge_model: tuple[str, ...], seed: int,
            n_comparisons: int | None, base_url: str | None, max_connections: int,
            quiet: bool) -> None:
    """Pairwise win rate against real problems, judged in both orders."""
    from assay.datagen.pipeline import metrics_of, run_step

    store = _store()
    try:
        rid = run_step(store, "datagen_winrate", (list(judge_model) or ["local"])[0],
                       {"data": str(data), "reference": str(reference), "seed": seed,
                        "n_comparisons": n_comparisons},
                       _step(base_url, max_connections, quiet, seed))
        m = metrics_of(store, rid)
    finally:
        store.close()
    click.echo(f"run {rid}: win rate {_fmt(m.get('win_rate_adjusted'))}, position "
               f"inconsistency {_fmt(m.get('position_inconsistency_rate'))}")


@click.command("verify")
@data_argument
@solver_option
@click.option("--reference", default=None,
              help="Also flag near-duplicates of this reference set.")
@step_options
def verify(data: Path, solver_model: tuple[str, ...], reference: str | None,
           base_url: str | None, max_connections: int, quiet: bool) -> None:
    """Solve each problem with solver models and check the stated answers (math-verify)."""
    from assay.datagen.pipeline import verify as run_verify
    from assay.datagen.problem import load_problems

    store = _store()
    try:
        _, summary = run_verify(store, data, list(solver_model) or ["local"],
                                step=_step(base_url, max_connections, quiet))
    finally:
        store.close()
    click.echo(f"answers reproduced by at least one solver: {_fmt(summary['any_solver_agrees'])}")
    if summary["unreproduced"]:
        click.echo(f"flagged (no solver agrees): {', '.join(summary['unreproduced'])}")
    if reference:
        from assay.datagen.references import load_reference
        from assay.datagen.verify import near_duplicates

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
              help="Reference set (file, HF id, 'math500'); default the book's AIME set, "
              "MATH-500 when offline.")
@click.option("--rubric", default=None, help="Custom rubric YAML.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed for generation and pairing.")
@click.option("--delay", type=float, default=0.0, show_default=True,
              help="Seconds between generator calls.")
@step_options
def pipeline(n: int, model: str, judge_model: tuple[str, ...],
             solver_model: tuple[str, ...], reference: str | None, rubric: str | None,
             seed: int, delay: float, base_url: str | None, max_connections: int,
             quiet: bool) -> None:
    """Generate, judge, compare with real problems, verify answers; one comprehensive report."""
    from assay.datagen.judge import self_preference_warning
    from assay.datagen.pipeline import run_pipeline

    judges = list(judge_model) or ["local"]
    warning = self_preference_warning(model, judges)
    if warning:
        click.echo(f"warning: {warning}", err=True)
    record = run_pipeline(n=n, model=model, judge_models=judges,
                          solver_models=list(solver_model) or None,
                          reference=reference, rubric=rubric, seed=seed, delay=delay,
                          step=_step(base_url, max_connections, quiet, seed))
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
@click.option("--judge-scores", default=None,
              help="JSON of judge scores to show beside each item.")
@click.option("--blind/--no-blind", default=False, help="Hide judge scores until you submit.")
@click.option("--no-browser", is_flag=True, help="Do not open a browser.")
def review(data: Path, reviewer: str | None, port: int, judge_scores: str | None, blind: bool,
           no_browser: bool) -> None:
    """Human review page on 127.0.0.1: scores, status, comments; every submission saved.

    Bad data, a busy ``--port`` and the like are one-line errors (exit 2).
    """
    if not data.is_file():
        raise ConfigError(f"problems file not found: {data}")
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be 0-65535 (0 picks a free port), got {port}")
    from assay.datagen.review.app import launch

    launch(data, reviewer, port=port, open_browser=not no_browser,
           judge_scores=judge_scores, blind=blind, echo=click.echo)
