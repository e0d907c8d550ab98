"""A run's rate limit (``--rpm``): call starts spaced evenly, across every sample."""

from __future__ import annotations

import asyncio
import time


class RateLimiter:
    """At most one call starts per ``60 / rpm`` seconds across a run: even spacing, not bursts that
    earn 429s. Retries wait their turn too; cache hits do not wait."""

    def __init__(self, rpm: float | None) -> None:
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def wait(self) -> float:
        """Sleep until the caller may start its call; returns the seconds waited."""
        if self.interval <= 0:
            return 0.0
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        waited = 0.0
        async with self._lock:
            now = time.monotonic()
            if self._next > now:
                waited = self._next - now
                await asyncio.sleep(waited)
                now = time.monotonic()
            self._next = now + self.interval
        return waited
