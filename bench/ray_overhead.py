"""What Ray costs and gives: the same qa run over 4 endpoints, locally and on Ray.

Four fake OpenAI-compatible servers (this process, a background thread each), each serving
at most C requests at once with latency L (the rest queue), so the endpoints together answer
at most 4*C/L requests a second. In the same run, alternately:

* ``assay run qa ... --base-url A --base-url B --base-url C --base-url D -c 4C --no-cache``
  (the local executor: one process);
* the same with ``--executor ray --workers 4 --ray-address ADDR`` on a Ray head this script
  starts (``ray start --head``; its start-up is timed apart, and so is each run's connection).

Throughput is the run's samples over the time the samples took (the run's stored
``elapsed_s``: from the first sample dealt to the last committed; start-up, data loading and
reports are reported apart, as ``overhead_s``). Prints JSON: each executor's throughput,
its share of the ideal 4*C/L (target >= 0.8 for Ray) and Ray's ratio to local (target
>= 0.9). Usage: python bench/ray_overhead.py [--n 2000] [--concurrency 8] [--latency 0.5]
[--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from assay.testing.fake_server import FakeServer, Rule  # noqa: E402

ECHO = [Rule(r"Repeat after me: (\S+)", "Answer: \\1")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(args: list[str], env: dict[str, str], home: Path) -> dict[str, float]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "assay", "run", "qa", *args, "-q"],
                       capture_output=True, text=True, env=dict(env, ASSAY_HOME=str(home)))
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"run failed: {p.stderr[-2000:]}")
    run_id = p.stdout.split()[1]
    con = sqlite3.connect(home / "assay.db")
    stats, = con.execute("SELECT stats FROM runs WHERE id = ?", (run_id,)).fetchone()
    n, = con.execute("SELECT COUNT(*) FROM samples WHERE run_id = ? AND error IS NULL",
                     (run_id,)).fetchone()
    con.close()
    elapsed = json.loads(stats)["elapsed_s"]
    return {"wall_s": round(wall, 2), "samples_s": round(elapsed, 2),
            "overhead_s": round(wall - elapsed, 2), "scored": n,
            "per_s": round(n / elapsed, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=8, help="C: requests each endpoint "
                    "serves at once")
    ap.add_argument("--latency", type=float, default=0.5, help="L: seconds each request takes")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="assay-ray-bench-"))
    data = work / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"s{i}", "question": f"Repeat after me: {i}",
                                        "answer": str(i)}) + "\n" for i in range(a.n)))
    port = free_port()
    env = dict(os.environ, OPENAI_API_KEY="bench", RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN=secrets.token_hex(16), RAY_USAGE_STATS_ENABLED="0")
    ray = str(Path(sys.executable).parent / "ray")
    t = time.perf_counter()
    subprocess.run([ray, "start", "--head", "--port", str(port), "--node-ip-address",
                    "127.0.0.1", "--include-dashboard=false", "--disable-usage-stats"],
                   env=env, check=True, capture_output=True)
    ray_start_s = time.perf_counter() - t
    servers = [FakeServer(rules=ECHO, latency=a.latency, max_concurrent=a.concurrency).start()
               for _ in range(4)]
    try:
        urls = [x for s in servers for x in ("--base-url", s.base_url)]
        common = ["--data", str(data), "--model", "openai/fake", *urls, "--no-cache",
                  "-c", str(4 * a.concurrency), "--max-retries", "0"]
        runs: dict[str, list[dict[str, float]]] = {"local": [], "ray": []}
        for k in range(a.repeat):
            for name, extra in (("local", []), ("ray", ["--executor", "ray", "--workers", "4",
                                                        "--ray-address", f"127.0.0.1:{port}"])):
                runs[name].append(one_run(common + extra, env, work / f"{name}-{k}"))
    finally:
        for s in servers:
            s.stop()
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True)
    ideal = 4 * a.concurrency / a.latency
    best = {name: max(r["per_s"] for r in rs) for name, rs in runs.items()}
    print(json.dumps({
        "n": a.n, "endpoints": 4, "concurrency_each": a.concurrency, "latency_s": a.latency,
        "ideal_per_s": ideal, "ray_start_s": round(ray_start_s, 2),
        "local": runs["local"], "ray": runs["ray"],
        "local_share_of_ideal": round(best["local"] / ideal, 3),
        "ray_share_of_ideal": round(best["ray"] / ideal, 3),
        "ray_vs_local": round(best["ray"] / best["local"], 3),
        "median_overhead_s": {k: statistics.median(r["overhead_s"] for r in rs)
                              for k, rs in runs.items()},
        "targets": {"ray_share_of_ideal": 0.8, "ray_vs_local": 0.9}}, indent=1))


if __name__ == "__main__":
    main()
