"""Options and the run driver shared by every ``assay run <task>`` command."""

from __future__ import annotations

import contextlib
import importlib
import signal
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import click

from assay.agents.react import AGENTS, agent_spec
from assay.agents.tools import BUILTIN
from assay.api import make_spec, run_async
from assay.cli.columns import wrapped
from assay.core.failures import ErrorSummary, error_summary
from assay.core.redact import redact_url
from assay.core.spec import EXECUTORS
from assay.engine.loop import run
from assay.engine.runner import Engine, RunSpec
from assay.errors import AssayError, ConfigError
from assay.metrics.format import by_name, counted, fmt_rate
from assay.models.base import DEFAULT_MAX_REPLY_BYTES
from assay.store.described import cost_line, run_cost, run_headline, run_report
from assay.store.sqlite import Store
from assay.tasks.options import json_or_text

_MODEL_HELP = ("What to evaluate: 'local' (embedded SmolLM2-135M), 'local/<file.gguf>', "
               "'openai/<model>' (any OpenAI-compatible server), "
               "'python/<module>:<factory>' or 'agent/react?model=M&tools=a,b' (a model with "
               "assay's reference agent).")


#: ``--model``: repeated, the task (or each task of a plan) runs once per model
MODELS_OPTION = click.Option(
    ["--model", "-m"], multiple=True, default=("local",), show_default=True,
    help=_MODEL_HELP + " Repeat it to run the task (or the plan) once per model (child "
    "runs of one parent run) and compare them.")

#: the options every ``assay run <task>`` command shares (declared once, here)
SHARED_OPTIONS = [
    MODELS_OPTION,
    click.Option(["--base-url"], multiple=True,
                 help="Endpoint for openai/ models (default $OPENAI_BASE_URL, then OpenAI). "
                 "The key comes from $OPENAI_API_KEY and is never stored. Repeat it for "
                 "replicas of one model: calls go to the least busy, a failing one is "
                 "taken out."),
    click.Option(["--endpoints"], type=click.Path(exists=True, dir_okay=False), default=None,
                 help="A file of endpoints for the model, one URL a line (as --base-url "
                 "repeated)."),
    click.Option(["--agent"], type=click.Choice(AGENTS), default=None,
                 help="Run the model with assay's reference agent and --tools (the score is "
                 "the model with this agent); the same as --model "
                 "'agent/react?model=M&tools=a,b'."),
    click.Option(["--tools"], default=None, metavar="A,B",
                 help=f"The agent's built-in tools: {', '.join(BUILTIN)}."),
    click.Option(["--mcp"], multiple=True, metavar="COMMAND",
                 help="An MCP server's command line (stdio) whose tools the agent gets; "
                 "repeatable. Started per sample, stopped when it ends."),
    click.Option(["--search-corpus"], type=click.Path(exists=True, file_okay=False),
                 default=None, help="A folder of documents the search and fetch tools read "
                 "(offline BM25); else a hosted search API whose key is set."),
    click.Option(["--limit", "-n"], type=int, default=None,
                 help="Evaluate only the first N samples."),
    click.Option(["--sample-ids"], default=None, help="Comma-separated sample ids to evaluate."),
    click.Option(["--max-connections", "-c"], type=int, default=32, show_default=True,
                 help="Concurrent model calls (and samples in flight)."),
    click.Option(["--timeout"], type=float, default=120.0, show_default=True,
                 help="Seconds before one model call times out."),
    click.Option(["--sample-timeout"], type=float, default=None,
                 help="Seconds before a whole sample is abandoned as an error."),
    click.Option(["--max-retries"], type=int, default=5, show_default=True,
                 help="Retries per call on 429/5xx/timeouts/connection errors."),
    click.Option(["--epochs"], type=int, default=1, show_default=True,
                 help="Times each sample is run."),
    click.Option(["--seed"], type=int, default=None, help="Seed for generation and retry jitter."),
    click.Option(["--temperature"], type=float, default=None, help="Sampling temperature."),
    click.Option(["--param"], multiple=True,
                 help="Extra generation parameter KEY=VALUE (VALUE parsed as JSON), "
                 "repeatable."),
    click.Option(["--no-cache"], is_flag=True,
                 help="Bypass the response cache (neither read nor write)."),
    click.Option(["--max-reply-bytes"], type=int, default=DEFAULT_MAX_REPLY_BYTES,
                 show_default=True,
                 help="Largest reply accepted; a bigger one is that sample's error."),
    click.Option(["--rpm"], type=float, default=None,
                 help="At most this many model calls start per minute (a provider's rate "
                 "limit); starts are spaced evenly."),
    click.Option(["--allow-weak-sandbox"], is_flag=True,
                 help="Where bubblewrap is missing, run code from data or from a model "
                 "(eval_code, HumanEval/MBPP tests) with weak isolation: the host's files "
                 "and network within its reach. Warned on the console and marked in every "
                 "report; without it such a run is refused."),
    click.Option(["--max-error-rate"], type=float, default=1.0, show_default=True,
                 help="The run ends 'failed' (exit 1) when its share of errored samples "
                 "passes this; 1.0: only when every sample errored."),
    click.Option(["--executor"], type=click.Choice(EXECUTORS), default="local",
                 show_default=True,
                 help="Where samples run: this process, or the actors of a Ray cluster "
                 "(pip install 'assay[ray]'); the results are the same."),
    click.Option(["--workers"], type=int, default=None,
                 help="Ray actors (default: one per CPU of the cluster)."),
    click.Option(["--ray-address"], default=None,
                 help="The Ray cluster: auto, ray://HOST:PORT, or unset to start a local one."),
    click.Option(["--pricing"], type=click.Path(exists=True, dir_okay=False), default=None,
                 help="YAML of prices in USD per million tokens, over genai-prices': "
                 "'openai/gpt-4o-mini: {input: 0.15, cached_input: 0.075, output: 0.6}'. "
                 "Local and self-hosted models cost nothing unless priced here."),
    click.Option(["--cost-limit"], type=float, default=None, metavar="USD",
                 help="Start no new sample once the run's calls cost this much (in-flight "
                 "samples finish; the run ends interrupted; --resume with a higher limit)."),
    click.Option(["--token-limit"], type=int, default=None, metavar="N",
                 help="The same, counted in tokens paid for (cache hits are free)."),
    click.Option(["--time-limit"], type=float, default=None, metavar="SECONDS",
                 help="The same, counted in the run's seconds (all its sessions)."),
    click.Option(["--sample-token-limit"], type=int, default=None, metavar="N",
                 help="A sample whose calls pass N tokens ends as an error saying so."),
    click.Option(["--reasoning-effort"], type=click.Choice(["low", "medium", "high"]),
                 default=None, help="A reasoning model's effort, sent as its provider takes it."),
    click.Option(["--reasoning-tokens"], type=int, default=None, metavar="N",
                 help="A reasoning model's thinking budget (Anthropic, OpenRouter)."),
    click.Option(["--reasoning-tags"], nargs=2, multiple=True, metavar="OPEN CLOSE",
                 help="Markers around reasoning in a reply's text, kept in the transcript "
                 "and not scored (default: <think> </think>); repeatable."),
    click.Option(["--batch"], is_flag=True,
                 help="Send uncached calls through the provider's Batch API (OpenAI's: "
                 "half price, within 24 h); the process may exit, --resume collects."),
    click.Option(["--batch-poll"], type=float, default=30.0, show_default=True,
                 metavar="SECONDS", help="First wait between batch status checks (doubles "
                 "up to 10 min)."),
    click.Option(["--resume"], default=None,
                 help="Continue an interrupted run by id; finished samples are not redone."),
    click.Option(["--quiet", "-q"], is_flag=True, help="No progress bar (for CI)."),
]
SHARED_NAMES = tuple(str(o.name) for o in SHARED_OPTIONS)

#: shared options that may change when a run is resumed: they do not change its samples
RESUME_OVERRIDABLE = {"base_url", "endpoints", "max_connections", "timeout", "sample_timeout",
                      "max_retries", "no_cache", "max_reply_bytes", "rpm", "quiet", "resume",
                      "allow_weak_sandbox", "max_error_rate", "executor", "workers",
                      "ray_address", "pricing", "cost_limit", "token_limit", "time_limit",
                      "sample_token_limit", "batch_poll"}


def parse_params(items: list[str] | None, temperature: float | None) -> dict[str, Any]:
    """``KEY=VALUE`` strings into a dict (values parsed as JSON when they parse)."""
    params: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--param expects KEY=VALUE, got {item!r}")
        params[key] = json_or_text(value)
    if temperature is not None:
        params["temperature"] = temperature
    return params


def endpoint_options(base_url: str | Sequence[str] | None,
                     endpoints: str | None = None) -> dict[str, Any]:
    """``base_url`` and, for several, ``endpoints`` from ``--base-url`` (repeated) and
    ``--endpoints FILE`` (one URL a line; ``#`` starts a comment)."""
    urls = [base_url] if isinstance(base_url, str) else list(base_url or ())
    if endpoints:
        with open(endpoints, encoding="utf-8") as f:
            urls += [line.split("#", 1)[0].strip() for line in f
                     if line.split("#", 1)[0].strip()]
        if not urls:
            raise ConfigError(f"--endpoints {endpoints} lists no URL; give one URL a line")
    urls = list(dict.fromkeys(urls))  # the same endpoint twice is one endpoint
    return {"base_url": urls[0] if urls else None,
            "endpoints": urls if len(urls) > 1 else None}


def engine_options(*, base_url: str | Sequence[str] | None, limit: int | None,
                   sample_ids: str | None,
                   max_connections: int, timeout: float, sample_timeout: float | None,
                   max_retries: int, epochs: int, seed: int | None, no_cache: bool,
                   param: list[str] | None, temperature: float | None,
                   max_reply_bytes: int, rpm: float | None = None,
                   allow_weak_sandbox: bool = False,
                   max_error_rate: float = 1.0, executor: str = "local",
                   workers: int | None = None,
                   ray_address: str | None = None,
                   endpoints: str | None = None, pricing: str | None = None,
                   cost_limit: float | None = None, token_limit: int | None = None,
                   time_limit: float | None = None, sample_token_limit: int | None = None,
                   reasoning_effort: str | None = None, reasoning_tokens: int | None = None,
                   reasoning_tags: Sequence[Sequence[str]] = (), batch: bool = False,
                   batch_poll: float = 30.0) -> dict[str, Any]:
    """The engine part of a RunSpec from the shared CLI options."""
    ids = None
    if sample_ids is not None:
        ids = [s.strip() for s in sample_ids.split(",") if s.strip()]
        if not ids:
            raise ConfigError("--sample-ids lists no ids; give comma-separated sample ids")
    params = parse_params(param, temperature)
    for name, value in (("reasoning_effort", reasoning_effort),
                        ("reasoning_tokens", reasoning_tokens)):
        if value is not None:
            params[name] = value
    return dict(**endpoint_options(base_url, endpoints), limit=limit, sample_ids=ids,
                max_connections=max_connections,
                timeout=timeout, sample_timeout=sample_timeout, max_retries=max_retries,
                epochs=epochs, seed=seed, cache=not no_cache, pricing=pricing,
                cost_limit=cost_limit, token_limit=token_limit, time_limit=time_limit,
                sample_token_limit=sample_token_limit,
                reasoning_tags=[list(t) for t in reasoning_tags] or None, batch=batch,
                batch_poll=batch_poll,
                params=params, max_reply_bytes=max_reply_bytes,
                rpm=rpm, allow_weak_sandbox=bool(allow_weak_sandbox),
                max_error_rate=max_error_rate, executor=executor, workers=workers,
                ray_address=ray_address)


def _stop_on_sigterm(_signum: int, _frame: Any) -> None:
    """Stop the run as Ctrl-C would: raise SIGINT where it has a Python handler, else directly
    (a process started with SIGINT ignored: background jobs, some CI runners)."""
    if callable(signal.getsignal(signal.SIGINT)):
        signal.raise_signal(signal.SIGINT)
    else:
        raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM stops a run the way Ctrl-C does (run marked interrupted)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def execute_run(task: str, *, resume: str | None, quiet: bool, model: str | Sequence[str],
                engine_options: dict[str, Any], task_options: dict[str, Any],
                overrides: dict[str, Any] | None = None) -> Any:
    """Shared body of every ``assay run <task>``: several models run as children of one parent
    run; a ``failed`` run prints its most common error and exits 1."""
    models = [model] if isinstance(model, str) else list(model)
    store = Store()
    engine = Engine(store, quiet=quiet)
    spec = None
    try:
        if resume:
            record = store.get_run(resume)
            if record.get("kind") == "pipeline" and _models().is_models_run(record):
                return _models().run_models(
                    store, task, models, resume=record["id"], quiet=quiet,
                    engine_options=engine_options, task_options=task_options, overrides=overrides)
            check_same_task(record, task)
            for line in resume_changes(store, resume, overrides or {}):
                click.echo(f"resume: {line}", err=True)
        elif len(models) > 1:
            return _models().run_models(store, task, models, resume=None, quiet=quiet,
                                        engine_options=engine_options, task_options=task_options)
        else:
            spec = make_spec(task, models[0], task_options=task_options, engine=engine_options)
        started = time.perf_counter()
        with sigterm_as_interrupt():
            result = run(run_async(spec, resume=resume, store=store, quiet=quiet,
                                   engine=engine, overrides=overrides))
        record = store.get_run(result.run_id)  # its headline, stored when it ended
        failure = error_summary(store, result.run_id) if record["status"] == "failed" else None
    except KeyboardInterrupt:
        if engine.current_run_id:
            with contextlib.suppress(AssayError):  # locked: 'assay list runs' says interrupted
                store.set_run_status(engine.current_run_id, "interrupted")
            click.echo(f"interrupted; finished samples are saved. Resume with: "
                       f"assay run {task} --resume {engine.current_run_id}", err=True)
        raise SystemExit(130) from None
    finally:
        store.close()
    head, m = run_headline(record), result.metrics
    click.echo(f"run {result.run_id} {record['status']} in {time.perf_counter() - started:.1f}s")
    if head:
        click.echo(f"{head[0]}: {fmt_rate(head[1])}")
    elif m.get("unscored_note"):
        click.echo(f"not scored: {m['unscored_note']}")
    stats = result.stats
    roles = "".join(
        f" · {name} {r['model']}{' at ' + r['endpoint'] if r.get('endpoint') else ''}: "
        f"{r['calls']} calls (cache hits {r['cache_hits']})"
        for name, r in (stats.get("role_calls") or {}).items())
    said = [f"samples {m.get('n_samples', 0)} · scored {m.get('n_scored', 0)} · "
            f"errors {m.get('n_errors', 0)} · model calls {stats.get('model_calls', 0)} "
            f"(cache hits {stats.get('cache_hits', 0)}){roles}"]
    cost = cost_line(run_cost(record))
    if cost:
        said.append(cost)
    if record["stats"].get("stopped"):
        said.append(f"stopped: {record['stats']['stopped']}; no new sample started. Continue "
                    f"with: assay run {task} --resume {result.run_id} and a higher limit")
    agent = (record.get("model") or {}).get("agent")
    if isinstance(agent, dict):  # the score is the model with this agent: said where it is read
        loops = m.get("agent") or {}
        ended = by_name(loops.get("ended"))
        said.append(f"agent: {agent.get('label')}" + (f"; samples ended: {ended}" if ended
                                                        else ""))
    if m.get("n_errors") and failure is None:  # a failed run explains itself below
        for e in (m.get("top_errors") or [])[:TOP_ERRORS]:
            said.append(f"error ({counted(e['count'], 'sample')}): {e['message'][:200]}")
        said.append(f"the errored samples run again with: assay run {task} --resume "
                    f"{result.run_id}")
    # hints stored with the run (report.md has them too)
    said += [f"hint: {advice}" for advice in run_report(record).get("recommendations") or []]
    for line in wrapped(said):
        click.echo(line)
    for kind, path in result.reports.items():
        click.echo(f"{kind}: {path}")
    if failure is not None:
        _explain_failure(failure, f"assay run {task} --resume {result.run_id}")
        raise SystemExit(1)
    return result


#: the most common error messages a finished run with errors prints
TOP_ERRORS = 3


def _models() -> Any:
    """The multi-model driver's module, loaded only when ``--model`` is repeated."""
    return importlib.import_module("assay.cli.models")


def check_same_task(record: dict[str, Any], task: str) -> None:
    """Refuse to resume ``record`` from ``assay run TASK`` when it is a run of another
    task, or a plan or pipeline (one line naming the command that resumes it)."""
    rid, stored = record["id"], record["spec"].get("task") or record["task"]
    if record["kind"] != "task":
        raise ConfigError(f"run {rid} is a {record['kind']} run ({record['task']}), not a "
                          f"{task} run; see 'assay list runs' for how to resume it")
    if task not in (record["task"], stored):
        raise ConfigError(f"run {rid} is a {record['task']} run; resume it with "
                          f"assay run {stored} --resume {rid}")


def _explain_failure(failure: ErrorSummary, resume: str) -> None:
    """The lines that say why a run failed (stderr): its most common error, a hint."""
    click.echo(f"run failed: {failure.line()}", err=True)
    if failure.hint:
        click.echo(f"hint: {failure.hint}", err=True)
    click.echo(f"nothing is lost: fix the cause, then {resume} (the errored samples are "
               "run again)", err=True)


def given_names(ctx: Any, names: Iterable[str]) -> set[str]:
    """Those of ``names`` the user set (on the command line or from the environment)."""
    if ctx is None:
        return set()
    return {name for name in names if getattr(ctx.get_parameter_source(name), "name", None)
            in ("COMMANDLINE", "ENVIRONMENT")}


def agent_models(options: dict[str, Any]) -> list[str]:
    """The models ``--model`` names (popped from ``options``), each driven by the agent
    ``--agent`` names with its tools (the options popped too); one line where they clash."""
    models = options.pop("model")
    models = [models] if isinstance(models, str) else list(models)
    agent, tools = options.pop("agent", None), options.pop("tools", None)
    mcp, corpus = list(options.pop("mcp", None) or ()), options.pop("search_corpus", None)
    if agent is None:
        given = [f for f, v in (("--tools", tools), ("--mcp", mcp),
                                ("--search-corpus", corpus)) if v]
        if given:
            raise ConfigError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for "
                              "an agent: add --agent react (or give --model "
                              "'agent/react?model=M&tools=...')")
        return models
    names = [t.strip() for t in (tools or "").split(",") if t.strip()]
    out = []
    for model in models:
        if model.startswith("agent/"):
            raise ConfigError(f"--model {model} is already an agent; leave --agent out, or "
                              "give the model it drives")
        out.append(agent_spec(model, agent, names, mcp=mcp, search_corpus=corpus))
    return out


def resume_overrides(ctx: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The RunSpec changes a ``--resume`` asks for; refuses options that change the samples."""
    given = given_names(ctx, kwargs)
    refused = sorted(given - RESUME_OVERRIDABLE)
    if refused:
        flags = ", ".join("--" + n.replace("_", "-") for n in refused)
        raise ConfigError(
            f"--resume continues a run with the options it started with; {flags} would "
            "change its samples or scoring, so start a new run instead (only --base-url, "
            "--endpoints, --max-connections, --timeout, --sample-timeout, --max-retries, "
            "--no-cache, --max-reply-bytes, --rpm, --max-error-rate, --allow-weak-sandbox, "
            "--executor, --workers, --ray-address, --pricing, the limits and --batch-poll "
            "may change on resume)")
    out = {("cache" if name == "no_cache" else name):
           (not kwargs[name] if name == "no_cache" else kwargs[name])
           for name in sorted(given & RESUME_OVERRIDABLE - {"resume", "quiet", "endpoints"})}
    if given & {"base_url", "endpoints"}:
        out.update(endpoint_options(kwargs.get("base_url"), kwargs.get("endpoints")))
    return out


def resume_changes(store: Any, run_id: str, overrides: dict[str, Any]) -> list[str]:
    """Human lines for what ``overrides`` change in the stored spec of ``run_id``."""
    stored = RunSpec.from_dict(store.get_run(run_id)["spec"])
    lines = []
    for name, value in overrides.items():
        if name == "task_options":  # credentials given again: the same values
            continue
        old = getattr(stored, name)
        new = redact_url(value) if name == "base_url" else value
        if old != new:
            flag = "--no-cache" if name == "cache" else "--" + name.replace("_", "-")
            lines.append(f"{flag} changed from {old} to {new}")
    return lines
