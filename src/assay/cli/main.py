"""The ``assay`` command line (typer + rich).

User errors (:class:`AssayError`) print one line and exit with status 2;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from assay import __version__
from assay.errors import AssayError, ConfigError

app = typer.Typer(
    name="assay",
    help="Evaluate LLM agents and LLMs honestly: official scorers, confidence intervals, "
    "runs that resume. Start with: assay run qa --data examples/qa_example.jsonl --model local",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
run_app = typer.Typer(
    help="Run a benchmark against a model or agent. Results go to the workspace store "
    "(./assay-runs, or $ASSAY_HOME) and reports to assay-runs/runs/<run_id>/.",
    no_args_is_help=True,
)
list_app = typer.Typer(help="List runs, benchmarks or model providers.", no_args_is_help=True)
app.add_typer(run_app, name="run")
app.add_typer(list_app, name="list")

_STATE = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"assay {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """assay: evaluate LLM agents and LLMs."""
    _STATE["debug"] = debug


# -- shared run options -------------------------------------------------------------------
Model = Annotated[str, typer.Option(
    "--model", "-m",
    help="What to evaluate: 'local' (embedded SmolLM2-135M), 'local/<file.gguf>', "
    "'openai/<model>' (any OpenAI-compatible server) or 'python/<module>:<factory>'.")]
BaseUrl = Annotated[str | None, typer.Option(
    "--base-url", help="Endpoint for openai/ models (default $OPENAI_BASE_URL, then OpenAI). "
    "The key comes from $OPENAI_API_KEY and is never stored.")]
Limit = Annotated[int | None, typer.Option("--limit", "-n", help="Evaluate only the first N samples.")]
SampleIds = Annotated[str | None, typer.Option(
    "--sample-ids", help="Comma-separated sample ids to evaluate.")]
MaxConn = Annotated[int, typer.Option("--max-connections", "-c",
                                      help="Concurrent model calls (and samples in flight).")]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds before one model call times out.")]
SampleTimeout = Annotated[float | None, typer.Option(
    "--sample-timeout", help="Seconds before a whole sample is abandoned as an error.")]
Retries = Annotated[int, typer.Option(
    "--max-retries", help="Retries per call on 429/5xx/timeouts/connection errors.")]
Epochs = Annotated[int, typer.Option("--epochs", help="Times each sample is run.")]
Seed = Annotated[int | None, typer.Option("--seed", help="Seed for generation and retry jitter.")]
Temperature = Annotated[float | None, typer.Option("--temperature", help="Sampling temperature.")]
Params = Annotated[list[str] | None, typer.Option(
    "--param", help="Extra generation parameter KEY=VALUE (VALUE parsed as JSON), repeatable.")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Bypass the response cache (neither read nor write).")]
Resume = Annotated[str | None, typer.Option(
    "--resume", help="Continue an interrupted run by id; finished samples are not redone.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar (for CI).")]


def parse_params(items: list[str] | None, temperature: float | None) -> dict[str, Any]:
    """``KEY=VALUE`` strings into a dict (values parsed as JSON when they parse)."""
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--param expects KEY=VALUE, got {item!r}")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    if temperature is not None:
        params["temperature"] = temperature
    return params


def execute_run(benchmark: str, *, resume: str | None, quiet: bool, model: str,
                engine_options: dict[str, Any], benchmark_options: dict[str, Any]) -> None:
    """Shared body of every ``assay run <benchmark>`` command."""
    from assay.api import make_spec, run_async
    from assay.engine.loop import run
    from assay.engine.runner import Engine
    from assay.reports.render import fmt_rate, headline
    from assay.store.sqlite import Store

    store = Store()
    engine = Engine(store, quiet=quiet)
    if resume:  # the stored spec is used; --base-url may put back URL credentials
        base_url = engine_options.get("base_url")
        spec = make_spec(benchmark, model, base_url=base_url) if base_url else None
    else:
        spec = make_spec(benchmark, model, **engine_options, **benchmark_options)
    started = time.perf_counter()
    try:
        result = run(run_async(spec, resume=resume, store=store, quiet=quiet,
                                       engine=engine))
    except KeyboardInterrupt:
        if engine.current_run_id:
            store.set_run_status(engine.current_run_id, "interrupted")
            typer.echo(f"interrupted; finished samples are saved. Resume with: "
                       f"assay run {benchmark} --resume {engine.current_run_id}", err=True)
        raise typer.Exit(130) from None
    finally:
        store.close()
    head = headline(result.metrics)
    m = result.metrics
    typer.echo(f"run {result.run_id} finished in {time.perf_counter() - started:.1f}s")
    if head:
        typer.echo(f"{head[0]}: {fmt_rate(head[1])}")
    stats = result.stats
    typer.echo(f"samples {m.get('n_samples', 0)} · scored {m.get('n_scored', 0)} · "
               f"errors {m.get('n_errors', 0)} · model calls {stats.get('model_calls', 0)} "
               f"(cache hits {stats.get('cache_hits', 0)})")
    for kind, path in result.reports.items():
        typer.echo(f"{kind}: {path}")


@run_app.command("qa")
def run_qa(
    data: Annotated[str | None, typer.Option(
        "--data", "-d", help="Dataset: a .jsonl/.json/.csv file or a Hugging Face dataset id.")] = None,
    model: Model = "local",
    split: Annotated[str | None, typer.Option(help="HF split (default 'test').")] = None,
    config: Annotated[str | None, typer.Option(help="HF dataset config name.")] = None,
    question_key: Annotated[str | None, typer.Option(help="Field holding the question.")] = None,
    answer_key: Annotated[str | None, typer.Option(help="Field holding the answer.")] = None,
    choices_key: Annotated[str | None, typer.Option(help="Field holding multiple-choice options.")] = None,
    id_key: Annotated[str | None, typer.Option(help="Field holding the sample id.")] = None,
    scorer: Annotated[str | None, typer.Option(
        help="exact | normalized | includes | numeric | f1 | choice | math (default: inferred).")] = None,
    tolerance: Annotated[float | None, typer.Option(
        help="Absolute tolerance for the numeric scorer.")] = None,
    template: Annotated[str | None, typer.Option(
        help="Jinja2 prompt template with {{ question }}, {{ choices }}, {{ row.<field> }}.")] = None,
    system_prompt: Annotated[str | None, typer.Option(help="System message for every sample.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Max tokens per answer (default 256).")] = None,
    base_url: BaseUrl = None,
    limit: Limit = None,
    sample_ids: SampleIds = None,
    max_connections: MaxConn = 32,
    timeout: Timeout = 120.0,
    sample_timeout: SampleTimeout = None,
    max_retries: Retries = 5,
    epochs: Epochs = 1,
    seed: Seed = None,
    temperature: Temperature = None,
    param: Params = None,
    no_cache: NoCache = False,
    resume: Resume = None,
    quiet: Quiet = False,
) -> None:
    """Question answering on any dataset with a question and an answer field."""
    if not resume and not data:
        raise ConfigError("missing --data FILE (a .jsonl/.json/.csv file or a Hugging Face id)")
    if template and Path(template).is_file():
        template = Path(template).read_text(encoding="utf-8")
    execute_run(
        "qa", resume=resume, quiet=quiet, model=model,
        engine_options=dict(
            base_url=base_url, limit=limit,
            sample_ids=[s.strip() for s in sample_ids.split(",") if s.strip()] if sample_ids else None,
            max_connections=max_connections, timeout=timeout, sample_timeout=sample_timeout,
            max_retries=max_retries, epochs=epochs, seed=seed, cache=not no_cache,
            params=parse_params(param, temperature),
        ),
        benchmark_options=dict(
            data=data, split=split, config=config, question_key=question_key,
            answer_key=answer_key, choices_key=choices_key, id_key=id_key, scorer=scorer,
            tolerance=tolerance, template=template, system_prompt=system_prompt,
            max_tokens=max_tokens,
        ),
    )


@app.command("report")
def report(
    run_id: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    out: Annotated[Path | None, typer.Option(help="Folder for the reports.")] = None,
) -> None:
    """Regenerate report.md, report.html and results.jsonl for a run from the store."""
    from assay.reports.render import write_reports
    from assay.store.sqlite import Store

    store = Store()
    try:
        for kind, path in write_reports(store, run_id, out).items():
            typer.echo(f"{kind}: {path}")
    finally:
        store.close()


@list_app.command("runs")
def list_runs(limit: Annotated[int, typer.Option(help="How many runs.")] = 20) -> None:
    """Recent runs in the workspace store."""
    from rich.console import Console
    from rich.table import Table

    from assay.store.sqlite import Store

    store = Store()
    try:
        runs = store.list_runs(limit)
    finally:
        store.close()
    table = Table("run", "benchmark", "model", "status", "samples", "errors", "created")
    for col in (0, 6):
        table.columns[col].no_wrap = True
    for r in runs:
        table.add_row(r["id"], r["benchmark"], str(r["model"].get("model")), r["status"],
                      str(r["samples"]), str(r["stats"].get("errors", "")),
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created_at"])))
    Console().print(table)


@list_app.command("benchmarks")
def list_benchmarks() -> None:
    """Benchmarks that can be run."""
    from assay.benchmarks.base import available_benchmarks, get_benchmark_class

    for name in available_benchmarks():
        typer.echo(f"{name:12s} {get_benchmark_class(name).description}")


@list_app.command("models")
def list_models() -> None:
    """Model providers and how to name them."""
    typer.echo("local                      embedded SmolLM2-135M-Instruct (Q4_1) via llama.cpp")
    typer.echo("local/<path.gguf>          any GGUF file, run in process")
    typer.echo("openai/<model>             any OpenAI-compatible endpoint (--base-url)")
    typer.echo("python/<module>:<factory>  a Python agent with run(prompt) -> str")


def main() -> None:
    """Console-script entry point: one line and exit 2 on user errors."""
    try:
        # Without standalone mode click returns (not raises) the code of typer.Exit.
        rc = app(standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except AssayError as e:
        if _STATE["debug"]:
            raise
        typer.echo(f"error: {e}", err=True)
        sys.exit(2)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(130)
    except Exception as e:  # click usage errors and friends
        import click

        if isinstance(e, click.exceptions.ClickException):
            e.show()
            sys.exit(e.exit_code)
        raise


if __name__ == "__main__":
    main()
