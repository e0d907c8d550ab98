"""When a run counts as failed (every sample errored, or more than ``--max-error-rate``), and
its most common error, stored (``stats["error"]``) and printed with a hint where usual."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

__all__ = ["ErrorSummary", "error_hint", "error_summary", "too_many_errors"]

#: how much of the most common error is shown (the rest is in the run's samples)
_SHOWN = 300
#: (pattern over an error's text, the hint shown with it); the first match wins
_HINTS = (
    (re.compile(r"\bHTTP 404\b"), "does --base-url end in /v1? (an OpenAI-compatible "
     "server answers under /v1, e.g. http://localhost:8000/v1)"),
    (re.compile(r"\bHTTP 40[13]\b"), "set the API key ($OPENAI_API_KEY) the server expects"),
    (re.compile(r"connection refused|cannot connect", re.I),
     "is the server running? (check --base-url)"),
    (re.compile(r"timed out|timeout", re.I),
     "the model is slow to answer: raise --timeout or lower --max-connections"),
    (re.compile(r"\bHTTP 429\b"), "the server is rate limiting: lower --rpm or "
     "--max-connections"),
    (re.compile(r"batch_expired|batch_cancelled|batch \S+ (failed|ended without)"),
     "the provider's batch did not answer these: --resume resubmits them"),
)


def error_hint(error: str) -> str | None:
    """A one-line hint for a usual cause of ``error`` (a sample's error text), else ``None``."""
    for pattern, hint in _HINTS:
        if pattern.search(error):
            return hint
    return None


@dataclass
class ErrorSummary:
    """What went wrong in a run: its sample counts and its most common error."""

    samples: int
    errors: int
    #: the most common error text and how many samples had it (``None``: no errors)
    common: str | None = None
    common_count: int = 0

    @property
    def rate(self) -> float:  # of samples, epochs included
        return self.errors / self.samples if self.samples else 0.0

    @property
    def hint(self) -> str | None:
        return error_hint(self.common) if self.common else None

    def line(self) -> str:
        """``3 of 3 samples failed; most common error (3x): HTTP 404 from ...``."""
        text = f"{self.errors} of {self.samples} samples failed"
        if self.common:
            common = " ".join(self.common.split())  # one line, however the server wrote it
            if len(common) > _SHOWN:
                common = common[:_SHOWN] + "…"
            text += f"; most common error ({self.common_count}x): {common}"
        return text


def error_summary(store: Any, run_id: str) -> ErrorSummary:
    """The sample counts and the most common error of run ``run_id`` in ``store``."""
    counts: Counter[str] = Counter()
    samples = 0
    for result in store.iter_results(run_id, transcripts=False, texts=False):
        samples += 1
        if result.error:
            counts[result.error] += 1
    if not counts:
        return ErrorSummary(samples, 0)
    common, n = counts.most_common(1)[0]
    return ErrorSummary(samples, sum(counts.values()), common, n)


def too_many_errors(summary: ErrorSummary, max_error_rate: float) -> bool:
    """Whether a run with ``summary`` failed: every sample errored, or its error rate
    passes ``max_error_rate`` (1.0, the default, fails only a run where all errored)."""
    return bool(summary.samples and summary.errors) and (
        summary.errors == summary.samples or summary.rate > max_error_rate)
