"""The async engine: bounded concurrency, retries, timeouts, cache, per-sample commits."""

from assay.engine.calls import RetryPolicy
from assay.engine.runner import Engine, RunSpec

__all__ = ["Engine", "RetryPolicy", "RunSpec"]
