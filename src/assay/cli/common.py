"""Options and the run driver shared by every ``assay run <benchmark>`` command."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, get_type_hints

import typer

from assay.errors import AssayError, ConfigError
from assay.models.base import DEFAULT_MAX_REPLY_BYTES

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
MaxReply = Annotated[int, typer.Option(
    "--max-reply-bytes", help="Largest reply accepted; a bigger one is that sample's error.")]

_CTX = "assay_click_context"

#: shared options that may change when a run is resumed: they do not change its samples
RESUME_OVERRIDABLE = {"base_url", "max_connections", "timeout", "sample_timeout",
                      "max_retries", "no_cache", "max_reply_bytes", "quiet", "resume"}


def parse_params(items: list[str] | None, temperature: float | None) -> dict[str, Any]:
    """``KEY=VALUE`` strings into a dict (values parsed as JSON when they parse)."""
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--param expects KEY=VALUE, got {item!r}")
        try:
            params[key] = json.loads(value)
        except (ValueError, RecursionError):  # not JSON (or absurd JSON): keep the text
            params[key] = value
    if temperature is not None:
        params["temperature"] = temperature
    return params


def engine_options(*, base_url: str | None, limit: int | None, sample_ids: str | None,
                   max_connections: int, timeout: float, sample_timeout: float | None,
                   max_retries: int, epochs: int, seed: int | None, no_cache: bool,
                   param: list[str] | None, temperature: float | None,
                   max_reply_bytes: int) -> dict[str, Any]:
    """The engine part of a RunSpec from the shared CLI options."""
    ids = None
    if sample_ids is not None:
        ids = [s.strip() for s in sample_ids.split(",") if s.strip()]
        if not ids:
            raise ConfigError("--sample-ids lists no ids; give comma-separated sample ids")
    return dict(
        base_url=base_url, limit=limit, sample_ids=ids,
        max_connections=max_connections, timeout=timeout, sample_timeout=sample_timeout,
        max_retries=max_retries, epochs=epochs, seed=seed, cache=not no_cache,
        params=parse_params(param, temperature), max_reply_bytes=max_reply_bytes,
    )


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM stops a run the way Ctrl-C does (run marked interrupted)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: signal.raise_signal(signal.SIGINT))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def execute_run(benchmark: str, *, resume: str | None, quiet: bool, model: str,
                engine_options: dict[str, Any], benchmark_options: dict[str, Any],
                overrides: dict[str, Any] | None = None) -> Any:
    """Shared body of every ``assay run <benchmark>`` command.

    On ``--resume`` the stored spec is used; ``overrides`` are the options the user
    gave that may change without changing the samples (endpoint, connections,
    timeouts, retries); each change is printed.
    """
    from assay.api import make_spec, run_async
    from assay.engine.loop import run
    from assay.engine.runner import Engine
    from assay.reports.render import fmt_rate, headline
    from assay.store.sqlite import Store

    store = Store()
    engine = Engine(store, quiet=quiet)
    spec = None
    try:
        if resume:
            changes = resume_changes(store, resume, overrides or {})
            for line in changes:
                typer.echo(f"resume: {line}", err=True)
        else:
            spec = make_spec(benchmark, model, **engine_options, **benchmark_options)
        started = time.perf_counter()
        with sigterm_as_interrupt():
            result = run(run_async(spec, resume=resume, store=store, quiet=quiet,
                                   engine=engine, overrides=overrides))
    except KeyboardInterrupt:
        if engine.current_run_id:
            try:
                store.set_run_status(engine.current_run_id, "interrupted")
            except AssayError:
                pass  # the store is locked: 'assay list runs' shows the run as interrupted
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
    max_reply_bytes: MaxReply = DEFAULT_MAX_REPLY_BYTES,
    resume: Resume = None,
    quiet: Quiet = False,
) -> None:
    """The options every ``assay run <benchmark>`` command shares (declared once, here)."""


def _given(ctx: Any, kwargs: dict[str, Any]) -> set[str]:
    """Names of the options the user set (on the command line or from the environment)."""
    if ctx is None:
        return set()
    given = set()
    for name in kwargs:
        source = ctx.get_parameter_source(name)
        if getattr(source, "name", None) in ("COMMANDLINE", "ENVIRONMENT"):
            given.add(name)
    return given


def resume_overrides(ctx: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The RunSpec changes a ``--resume`` asks for; refuses options that change the samples."""
    given = _given(ctx, kwargs)
    refused = sorted(given - RESUME_OVERRIDABLE)
    if refused:
        flags = ", ".join("--" + n.replace("_", "-") for n in refused)
        raise ConfigError(
            f"--resume continues a run with the options it started with; {flags} would "
            "change its samples or scoring, so start a new run instead (only --base-url, "
            "--max-connections, --timeout, --sample-timeout, --max-retries, --no-cache and "
            "--max-reply-bytes may change on resume)")
    out: dict[str, Any] = {}
    for name in sorted(given & RESUME_OVERRIDABLE - {"resume", "quiet"}):
        if name == "no_cache":
            out["cache"] = not kwargs[name]
        else:
            out[name] = kwargs[name]
    return out


def resume_changes(store: Any, run_id: str, overrides: dict[str, Any]) -> list[str]:
    """Human lines for what ``overrides`` change in the stored spec of ``run_id``."""
    from assay.core.redact import redact_url
    from assay.engine.runner import RunSpec

    stored = RunSpec.from_dict(store.get_run(run_id)["spec"])
    lines = []
    for name, value in overrides.items():
        old = getattr(stored, name)
        new = redact_url(value) if name == "base_url" else value
        if old != new:
            flag = "--no-cache" if name == "cache" else "--" + name.replace("_", "-")
            lines.append(f"{flag} changed from {old} to {new}")
    return lines


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
            ctx = kwargs.pop(_CTX, None)
            overrides = None
            if kwargs.get("resume"):
                overrides = resume_overrides(ctx, kwargs)
            produced = fn(**{k: v for k, v in kwargs.items() if k in own})
            options, after = produced if isinstance(produced, tuple) else (produced, None)
            eng = {k: kwargs[k] for k in shared}
            result = execute_run(
                benchmark, resume=eng.pop("resume"), quiet=eng.pop("quiet"),
                model=eng.pop("model"), engine_options=engine_options(**eng),
                benchmark_options=options, overrides=overrides,
            )
            if after is not None and result is not None:
                after(result)
            return result

        # typer hands the click context to a parameter annotated typer.Context; it tells
        # which options the user set (as opposed to defaults), which --resume needs
        params.append(inspect.Parameter(_CTX, inspect.Parameter.KEYWORD_ONLY,
                                        annotation=typer.Context))
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return deco
