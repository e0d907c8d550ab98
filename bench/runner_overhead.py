"""Engine overhead against the fake OpenAI-compatible server.

N samples (default 1000) go through the real engine (openai/ provider, retries,
response cache on but cold, scoring on, one SQLite commit per sample) against the fake
server running in its own process at fixed latency L (default 50 ms) and
concurrency C (default 100). The ideal wall time is N*L/C. In the same run a
plain aiohttp client sends the same N requests at the same concurrency, as the
baseline the engine is compared with.

Prints JSON: wall time, ideal, ratio to ideal, ratio to the aiohttp baseline,
samples/s. Usage: python bench/runner_overhead.py [--n 1000] [--latency 0.05]
[--concurrency 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def start_server(latency: float) -> tuple[subprocess.Popen[str], str]:
    """The fake server in its own process (the other core), echoing the number asked for."""
    rules = Path(tempfile.mkdtemp()) / "rules.json"
    rules.write_text(json.dumps([{"match": r"Repeat after me: (\S+)", "reply": "Answer: \\1"}]))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.testing.fake_server", "--port", "0", "--latency",
         str(latency), "--rules", str(rules)],
        stdout=subprocess.PIPE, text=True, env=env,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("READY "):
        proc.kill()
        raise SystemExit(f"fake server did not start: {line!r}")
    return proc, line.split()[1]


async def aiohttp_baseline(base_url: str, n: int, concurrency: int) -> float:
    """Wall time for n plain aiohttp posts at the given concurrency."""
    import aiohttp

    sem = asyncio.Semaphore(concurrency)
    t0 = time.perf_counter()
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as s:

        async def one(i: int) -> None:
            body = {"model": "fake", "messages": [{"role": "user",
                                                   "content": f"Repeat after me: {i}"}]}
            async with sem, s.post(base_url + "/chat/completions", json=body) as r:
                await r.json()

        await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - t0


async def engine_run(base_url: str, data: Path, n: int, concurrency: int) -> tuple[float, dict]:
    """Wall time of Engine.run for n samples (store in a fresh temp workspace)."""
    from assay.engine.runner import Engine, RunSpec
    from assay.store.sqlite import Store

    store = Store(Path(tempfile.mkdtemp()) / "assay.db")
    spec = RunSpec(
        task="qa", model="openai/fake", base_url=base_url, max_connections=concurrency,
        task_options={"data": str(data), "scorer": "exact"}, limit=n,
    )
    engine = Engine(store, quiet=True)
    t = time.perf_counter()
    run_id = await engine.run(spec)
    wall = time.perf_counter() - t
    totals = store.sample_totals(run_id)
    correct = sum(1 for r in store.results(run_id) if r.score_value() == 1.0)
    store.close()
    return wall, {**totals, "correct": correct}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5, help="runs of each; the median is reported")
    args = ap.parse_args()

    try:
        import uvloop  # noqa: F401

        loop_name = "uvloop"
    except ImportError:
        loop_name = "asyncio"
    data = Path(tempfile.mkdtemp()) / "bench.jsonl"
    with open(data, "w") as f:
        for i in range(args.n):
            f.write(json.dumps({"id": str(i), "question": f"Repeat after me: {i}",
                                "answer": str(i)}) + "\n")
    proc, base_url = start_server(args.latency)
    try:
        from assay.engine.loop import run as run_loop

        # One small untimed run first, so one-time imports (jinja2, scorers) are not
        # billed to the first measured run.
        run_loop(engine_run(base_url, data, min(args.n, 100), args.concurrency))
        baselines, walls, last = [], [], {}
        for _ in range(args.repeat):
            baselines.append(run_loop(aiohttp_baseline(base_url, args.n, args.concurrency)))
            wall, last = run_loop(engine_run(base_url, data, args.n, args.concurrency))
            walls.append(wall)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    ideal = args.n * args.latency / args.concurrency
    wall = statistics.median(walls)
    base = statistics.median(baselines)
    print(json.dumps({
        "n": args.n, "latency_s": args.latency, "concurrency": args.concurrency,
        "event_loop": loop_name, "repeat": args.repeat,
        "wall_s": round(wall, 3), "wall_s_all": [round(w, 3) for w in walls],
        "ideal_s": round(ideal, 3), "ratio_to_ideal": round(wall / ideal, 3),
        "samples_per_s": round(args.n / wall, 1),
        "aiohttp_baseline_s": round(base, 3), "ratio_to_aiohttp": round(wall / base, 3),
        "correct": last.get("correct"), "errors": last.get("errors"),
    }, indent=2))


if __name__ == "__main__":
    main()
