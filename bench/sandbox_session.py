"""A warm call in a live sandbox session against a cold start: prints JSON.

``python bench/sandbox_session.py [--n 30] [--shell python]`` times the same trivial work
(sum a small range, print it) ``n`` times each way, in the real bubblewrap sandbox:

* warm: ``await session.run(code)`` in one :class:`assay.sandbox.Session` started before
  the clock (the way an agent's python or bash tool calls it);
* cold: :func:`assay.sandbox.run_python`, a one-shot program (a new sandbox, cgroup,
  interpreter and scratch folder each time), the baseline measured in the same run.

Reports the median of each, ``cold_over_warm`` (how many times faster a warm call is) and
the time from starting a session to the end of its first (empty) call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from assay.sandbox import Limits, Session, describe_isolation, run_python

WORK = {"python": "print(sum(range(1000)))\n", "bash": "echo $((999 * 1000 / 2))\n"}


async def main(n: int, shell: str) -> dict:
    limits = Limits(timeout_s=60, cpu_s=600)
    t0 = time.perf_counter()
    session = Session(shell, limits=limits)  # type: ignore[arg-type]
    await session.start()
    await session.run("")
    started_s = time.perf_counter() - t0
    warm: list[float] = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            r = await session.run(WORK[shell])
            warm.append(time.perf_counter() - t0)
            assert r.stdout.strip() == "499500", (r.stdout, r.stderr)
    finally:
        await session.close()
    cold: list[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = await run_python("work.py", files={"work.py": WORK["python"]}, limits=limits)
        cold.append(time.perf_counter() - t0)
        assert r.stdout.strip() == "499500", (r.stdout, r.stderr)
    warm_ms, cold_ms = statistics.median(warm) * 1000, statistics.median(cold) * 1000
    return {"sandbox": describe_isolation(limits)["isolation"], "shell": shell, "n": n,
            "warm_call_median_ms": round(warm_ms, 3), "cold_start_median_ms": round(cold_ms, 1),
            "cold_over_warm": round(cold_ms / warm_ms, 1),
            "session_ready_ms": round(started_s * 1000, 1)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--shell", choices=sorted(WORK), default="python")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.n, args.shell)), indent=2))
