"""Options and the run driver shared by every ``assay run <benchmark>`` command."""

from __future__ import annotations

import functools
import inspect
import json
import time
from collections.abc import Callable
from typing import Annotated, Any, get_type_hints

import typer

from assay.errors import ConfigError

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


def engine_options(*, base_url: str | None, limit: int | None, sample_ids: str | None,
                   max_connections: int, timeout: float, sample_timeout: float | None,
                   max_retries: int, epochs: int, seed: int | None, no_cache: bool,
                   param: list[str] | None, temperature: float | None) -> dict[str, Any]:
    """The engine part of a RunSpec from the shared CLI options."""
    return dict(
        base_url=base_url, limit=limit,
        sample_ids=[s.strip() for s in sample_ids.split(",") if s.strip()] if sample_ids else None,
        max_connections=max_connections, timeout=timeout, sample_timeout=sample_timeout,
        max_retries=max_retries, epochs=epochs, seed=seed, cache=not no_cache,
        params=parse_params(param, temperature),
    )


def execute_run(benchmark: str, *, resume: str | None, quiet: bool, model: str,
                engine_options: dict[str, Any], benchmark_options: dict[str, Any]) -> Any:
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
    from assay.benchmarks.base import get_benchmark_class

    head = headline(result.metrics, get_benchmark_class(benchmark).headline_metric)
    m = result.metrics
    typer.echo(f"run {result.run_id} finished in {time.perf_counter() - started:.1f}s")
    if head:
        typer.echo(f"{head[0]}: {fmt_rate(head[1])}")
    elif result.metrics.get("unscored_note"):
        typer.echo(f"not scored: {result.metrics['unscored_note']}")
    stats = result.stats
    typer.echo(f"samples {m.get('n_samples', 0)} · scored {m.get('n_scored', 0)} · "
               f"errors {m.get('n_errors', 0)} · model calls {stats.get('model_calls', 0)} "
               f"(cache hits {stats.get('cache_hits', 0)})")
    for kind, path in result.reports.items():
        typer.echo(f"{kind}: {path}")
    return result




def _engine_template(
    model: Model = "local",
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
    """The options every ``assay run <benchmark>`` command shares (declared once, here)."""


def run_command(benchmark: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator for ``assay run <benchmark>``: adds the shared engine options and runs.

    The decorated function declares only its benchmark's options (it may also
    declare shared ones it needs, such as ``resume``) and returns the benchmark
    options, or ``(options, after)`` where ``after(result)`` runs once the run
    has finished.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        own = inspect.signature(fn).parameters
        shared = inspect.signature(_engine_template).parameters
        hints = {**get_type_hints(_engine_template, include_extras=True),
                 **get_type_hints(fn, include_extras=True)}
        params = [p.replace(annotation=hints[p.name]) for p in own.values()]
        params += [p.replace(annotation=hints[p.name]) for name, p in shared.items()
                   if name not in own]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            produced = fn(**{k: v for k, v in kwargs.items() if k in own})
            options, after = produced if isinstance(produced, tuple) else (produced, None)
            eng = {k: kwargs[k] for k in shared}
            result = execute_run(
                benchmark, resume=eng.pop("resume"), quiet=eng.pop("quiet"),
                model=eng.pop("model"), engine_options=engine_options(**eng),
                benchmark_options=options,
            )
            if after is not None and result is not None:
                after(result)
            return result

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return deco
