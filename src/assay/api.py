"""The Python API; the CLI is a thin layer over it.

>>> from assay import evaluate
>>> result = evaluate("qa", model="local", data="examples/qa_example.jsonl", limit=5)
>>> result.metrics["accuracy"]["value"]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core.redact import redact_url
from assay.engine.runner import Engine, RunSpec
from assay.store.sqlite import Store

_ENGINE_FIELDS = set(RunSpec.__dataclass_fields__) - {"benchmark", "model", "benchmark_options"}


@dataclass
class RunResult:
    """What a finished run produced."""

    run_id: str
    metrics: dict[str, Any]
    reports: dict[str, Path] = field(default_factory=dict)
    status: str = "finished"
    stats: dict[str, Any] = field(default_factory=dict)


def make_spec(benchmark: str, model: str = "local", **options: Any) -> RunSpec:
    """Split keyword options into engine settings and benchmark options."""
    engine = {k: v for k, v in options.items() if k in _ENGINE_FIELDS and v is not None}
    bench = {k: v for k, v in options.items() if k not in _ENGINE_FIELDS and v is not None}
    return RunSpec(benchmark=benchmark, model=model, benchmark_options=bench, **engine)


async def run_async(
    spec: RunSpec | None = None,
    *,
    resume: str | None = None,
    store: Store | None = None,
    quiet: bool = True,
    reports: bool = True,
    api_key: str | None = None,
    engine: Engine | None = None,
) -> RunResult:
    """Run (or resume) a spec, write its reports and return the metrics.

    To resume, give ``resume``; ``spec`` is then optional and only supplies a
    ``base_url`` with credentials (which are never stored).
    """
    from assay.benchmarks.base import get_benchmark_class
    from assay.models.base import get_subject

    own_store = store is None
    store = store or Store()
    try:
        engine = engine or Engine(store, quiet=quiet)
        if resume:
            stored = RunSpec.from_dict(store.get_run(resume)["spec"])
            if spec is not None and spec.base_url and redact_url(spec.base_url) == stored.base_url:
                stored.base_url = spec.base_url  # credentials are not stored: take them back
            spec = stored
        if spec is None:
            raise ValueError("give a RunSpec or a run id to resume")
        subject = None
        if api_key:  # otherwise the provider reads OPENAI_API_KEY itself
            subject = get_subject(spec.model, base_url=spec.base_url, api_key=api_key,
                                  timeout=spec.timeout)
        run_id = await engine.run(spec, resume=resume, subject=subject)
        run = store.get_run(run_id)
        metrics = get_benchmark_class(run["benchmark"]).metrics(
            store.results(run_id), run["spec"].get("benchmark_options"))
        paths: dict[str, Path] = {}
        if reports:
            from assay.reports.render import write_reports

            paths = write_reports(store, run_id)
        return RunResult(run_id, metrics, paths, run["status"], run["stats"])
    finally:
        if own_store:
            store.close()


def evaluate(benchmark: str, model: str = "local", **options: Any) -> RunResult:
    """Run ``benchmark`` on ``model`` synchronously.

    Options are the CLI's, in Python spelling: benchmark options (``data``,
    ``scorer``, ``question_key``, ...) and engine settings (``limit``,
    ``max_connections``, ``epochs``, ``seed``, ``base_url``, ``cache``, ...).
    ``api_key`` is used for the calls and never stored.
    """
    api_key = options.pop("api_key", None)
    quiet = options.pop("quiet", True)
    spec = make_spec(benchmark, model, **options)
    from assay.engine.loop import run

    return run(run_async(spec, quiet=quiet, api_key=api_key))
