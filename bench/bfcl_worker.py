"""What running the BFCL simulators in worker processes costs, against running them in process.

Over the 800 multi-turn entries of the official v4 data, each with its ground truth as
the model's trajectory (the same work both ways):

- ``check``: the checker's verdict, :func:`checker.check_entry` in this process against
  :func:`worker.run_bounded` (what scoring does: a pooled worker, pickled request and
  verdict);
- ``conversation``: every ground-truth call of an entry run step by step on its
  instances, in this process against a :func:`worker.session` (what a run does);
- ``start``: a fresh worker's start until it answers (its imports), and its memory.

For each: entries per second both ways (best of ``--repeat``, the two in turns), the ratio
(``overhead``: in-process rate / worker rate) and the number of entries whose results
differ (must be 0). Needs the light install of bfcl-eval. Prints JSON.

Usage: python bench/bfcl_worker.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from assay.tasks.bfcl.data import locate  # noqa: E402
from assay.tasks.bfcl.multiturn import sim, worker  # noqa: E402
from assay.tasks.bfcl.multiturn.checker import check_entry, is_long_context  # noqa: E402
from assay.tasks.bfcl.multiturn.data import load_multi_turn  # noqa: E402
from assay.tasks.bfcl.multiturn.executor import execute_calls  # noqa: E402

CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
              "multi_turn_long_context")


def entries() -> list[tuple[str, dict[str, Any], list[list[str]]]]:
    out = []
    for cat in CATEGORIES:
        data = load_multi_turn(locate(), cat)
        out += [(cat, e, data.ground_truth[e["id"]]) for e in data.entries]
    return out


def trajectory(gt: list[list[str]]) -> list[list[list[str]]]:
    return [[turn] if turn else [] for turn in gt]


def check_here(items: list[Any]) -> list[Any]:
    return [check_entry(trajectory(gt), e, gt, cat) for cat, e, gt in items]


def check_there(items: list[Any]) -> list[Any]:
    return [worker.run_bounded(worker.check, worker.setup(), trajectory(gt), e, gt, cat,
                               timeout=60) for cat, e, gt in items]


def converse_here(items: list[Any]) -> list[Any]:
    out = []
    for _, e, gt in items:
        with sim.pristine_long_context():
            methods = sim.involved_methods(sim.make_instances(
                e["involved_classes"], e["initial_config"],
                long_context=is_long_context(e["id"])))
            out.append([execute_calls(turn, methods) for turn in gt])
    return out


def converse_there(items: list[Any]) -> list[Any]:
    async def go() -> list[Any]:
        out = []
        for _, e, gt in items:
            async with worker.session() as sims:
                await sims.acall(worker.open_entry, worker.setup(), e["involved_classes"],
                                 e["initial_config"], is_long_context(e["id"]))
                out.append([await sims.acall(worker.run_calls, turn) for turn in gt])
        return out

    return asyncio.run(go())


def best(fn: Any, items: list[Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn(items)
        times.append(time.perf_counter() - t)
    return len(items) / min(times), result


def start_cost(repeat: int) -> dict[str, float]:
    seconds, rss = [], []
    for _ in range(repeat):
        worker.shutdown()
        t = time.perf_counter()
        w = worker.Worker()
        w.call(worker.prepare, {})
        seconds.append(time.perf_counter() - t)
        status = Path(f"/proc/{w.proc.pid}/status").read_text()
        rss.append(int(next(x for x in status.splitlines() if x.startswith("VmRSS")).split()[1]))
        w.kill()
    return {"seconds": round(min(seconds), 3), "rss_mb": round(min(rss) / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    items = entries()
    report: dict[str, Any] = {"entries": len(items), "start": start_cost(args.repeat)}
    for name, here, there in (("check", check_here, check_there),
                              ("conversation", converse_here, converse_there)):
        worker.shutdown()
        there(items[:1])  # a ready worker in the pool, as in a run
        rate_here, ours_here = best(here, items, args.repeat)
        rate_there, ours_there = best(there, items, args.repeat)
        report[name] = {
            "in_process_per_s": round(rate_here, 1), "worker_per_s": round(rate_there, 1),
            "overhead": round(rate_here / rate_there, 2),
            "disagreements": sum(a != b for a, b in zip(ours_here, ours_there, strict=True))}
    worker.shutdown()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
