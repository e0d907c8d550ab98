"""A run's budget: ``--cost-limit``, ``--token-limit`` and ``--time-limit`` over the whole run
(every session of it), checked before each sample starts; ``--sample-token-limit`` ends one
sample. Counted are the calls the run paid for: a cache hit costs nothing."""

from __future__ import annotations

import time
from typing import Any

from assay.errors import ModelCallError
from assay.store.described import usd


class RunLimits:
    """What the run has spent (earlier sessions, committed samples, and the calls of samples
    still running, as they happen) against its limits; :meth:`reason` says when to stop."""

    def __init__(self, spec: Any, *, cost: float, tokens: int, elapsed: float) -> None:
        self.cost_limit, self.token_limit = spec.cost_limit, spec.token_limit
        self.time_limit = spec.time_limit
        self._cost, self._tokens, self._elapsed = cost, tokens, elapsed
        self._started = time.monotonic()
        #: (seq, epoch) of a running sample -> [cost, tokens] of its calls so far
        self._live: dict[tuple[int, int], list[float]] = {}
        #: why the run stopped starting samples (kept once said)
        self.stopped: str | None = None

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.cost_limit, self.token_limit, self.time_limit))

    def spent(self) -> tuple[float, int]:
        live = self._live.values()
        return (self._cost + sum(c for c, _ in live), self._tokens + int(sum(t for _, t in live)))

    def live(self, seq: int, epoch: int) -> Any:
        """The meter of one running sample's calls (on this process)."""
        entry = self._live.setdefault((seq, epoch), [0.0, 0])

        def add(cost: float, tokens: int) -> None:
            entry[0] += cost
            entry[1] += tokens
        return add

    def settle(self, seq: int, epoch: int, cost: float, tokens: int) -> None:
        """A sample committed: its own totals replace what was metered live."""
        self._live.pop((seq, epoch), None)
        self._cost += cost
        self._tokens += tokens

    def reason(self) -> str | None:
        """Why no new sample may start now (``None``: it may)."""
        if self.stopped is None:
            cost, tokens = self.spent()
            elapsed = self._elapsed + time.monotonic() - self._started
            if self.cost_limit is not None and cost >= self.cost_limit:
                self.stopped = f"cost limit reached: {usd(cost)} of {usd(self.cost_limit)}"
            elif self.token_limit is not None and tokens >= self.token_limit:
                self.stopped = f"token limit reached: {tokens:,} of {self.token_limit:,}"
            elif self.time_limit is not None and elapsed >= self.time_limit:
                self.stopped = f"time limit reached: {elapsed:.0f}s of {self.time_limit:g}s"
        return self.stopped


class SampleMeter:
    """One sample's billed calls, all its roles together: forwarded to the run's live meter,
    and past ``--sample-token-limit`` the call that crossed it ends the sample."""

    __slots__ = ("limit", "tokens", "_run")

    def __init__(self, limit: int | None, run: Any = None) -> None:
        self.limit, self.tokens, self._run = limit, 0, run

    def __call__(self, cost: float | None, tokens: int) -> None:
        self.tokens += tokens
        if self._run is not None:
            self._run(cost or 0.0, tokens)
        if self.limit is not None and self.tokens > self.limit:
            raise ModelCallError(f"sample token limit reached: {self.tokens:,} tokens used, "
                                 f"the limit is {self.limit:,} (--sample-token-limit)",
                                 transient=False)
