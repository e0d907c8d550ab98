"""How far one driver goes: the real Ray driver (``RayExecutor``, the engine, the store) fed
by synthetic workers, Ray actors that answer each sample at once with a ready result of a
realistic size, so nothing but the driver, Ray's calls and the store is measured.

Three figures, in one run:

* ``store``: the store alone, ``Store.record`` of N results through the background writer
  (results a second and the writer's batch size), the ceiling of any executor;
* ``driver``: for each number of synthetic workers, the run's results a second and the
  driver's CPU seconds per result (``time.process_time`` of this process, which is the driver);
* the saturation point: where adding workers stops adding results a second.

Prints JSON. Usage: python bench/ray_scale_sim.py [--n 4000] [--workers 1,2,4,8]
[--payload 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from assay.core.spec import RunSpec  # noqa: E402
from assay.core.types import SampleResult  # noqa: E402
from assay.engine.ray_executor import RayExecutor  # noqa: E402
from assay.engine.runner import Engine  # noqa: E402
from assay.store.sqlite import Store  # noqa: E402
from assay.store.writer import Writer  # noqa: E402
from assay.tasks.registry import build_task  # noqa: E402
from assay.testing.fake_server import FakeServer  # noqa: E402


def result_for(seq: int, sample: Any, epoch: int, payload: int) -> SampleResult:
    """A scored result the size of a real one (a reply of ``payload`` characters)."""
    text = ("Answer: " + str(sample.target) + " ").ljust(payload, "x")
    return SampleResult(
        run_id="", sample_id=sample.id, epoch=epoch, seq=seq, input=sample.input_json(),
        target=sample.target, output=text, prediction=str(sample.target),
        scores={"exact_match": {"name": "exact_match", "value": 1.0,
                                "answer": str(sample.target), "explanation": "",
                                "metadata": {"extraction": "answer_marker"}}},
        error=None, latency_s=0.001, input_tokens=20, output_tokens=payload // 4,
        transcript=[{"role": "user", "content": str(sample.input)},
                    {"role": "assistant", "content": text}],
        model_calls=1, created_at=time.time())


class SyntheticWorker:
    """A worker with the real worker's constructor and call, and no model: a ready result."""

    def __init__(self, task: Any, spec: Any, subject: Any, reader: Any, pacers: Any,
                 connections: int) -> None:
        self.payload = int(os.environ.get("ASSAY_SIM_PAYLOAD", "2000"))

    def pid(self) -> int:
        return os.getpid()

    async def run_one(self, seq: int, sample: Any, epoch: int, files: Any) -> Any:
        return result_for(seq, sample, epoch, self.payload), []


def store_rate(home: Path, n: int, payload: int, data: list[Any]) -> dict[str, Any]:
    store = Store(home / "store-only.db")
    run = store.create_run(task="qa", spec={"task": "qa"}, model={"model": "m"}, dataset={},
                           package_version="bench")
    rows = [result_for(i, s, 0, payload) for i, s in enumerate(data[:n])]
    t = time.perf_counter()
    with store.background_writes():
        for r in rows:
            r.run_id = run
            store.record(run, r)
    took = time.perf_counter() - t
    store.close()
    return {"results": n, "seconds": round(took, 3), "per_s": round(n / took),
            "writer_batch_max": Writer.BATCH}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--payload", type=int, default=2000, help="characters of each reply")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="assay-ray-sim-"))
    data_file = work / "d.jsonl"
    data_file.write_text("".join(json.dumps({"id": f"s{i}", "question": f"Repeat after me: {i}",
                                             "answer": str(i)}) + "\n" for i in range(a.n)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16),
               RAY_USAGE_STATS_ENABLED="0", ASSAY_SIM_PAYLOAD=str(a.payload),
               PYTHONPATH=os.pathsep.join([str(ROOT / "bench"), os.environ.get("PYTHONPATH", "")]))
    os.environ.update({k: env[k] for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN",
                                           "RAY_USAGE_STATS_ENABLED", "ASSAY_SIM_PAYLOAD")})
    ray = str(Path(sys.executable).parent / "ray")
    subprocess.run([ray, "start", "--head", "--port", str(port), "--node-ip-address",
                    "127.0.0.1", "--include-dashboard=false", "--disable-usage-stats"],
                   env=env, check=True, capture_output=True)
    out: dict[str, Any] = {"n": a.n, "payload_chars": a.payload, "cpus": os.cpu_count()}
    try:
        with FakeServer(default_reply="unused") as server:  # the engine's preflight only
            driver = []
            for k in (int(x) for x in a.workers.split(",")):
                store = Store(work / f"w{k}" / "assay.db")
                spec = RunSpec(task="qa", model="openai/fake", base_url=server.base_url,
                               task_options={"data": str(data_file)}, executor="ray",
                               workers=k, ray_address=f"127.0.0.1:{port}",
                               max_connections=64 * k, cache=False)
                executor = RayExecutor(spec, worker=SyntheticWorker)
                cpu = time.process_time()
                run_id = asyncio.run(Engine(store, quiet=True, executor=executor).run(spec))
                cpu = time.process_time() - cpu
                stats = store.get_run(run_id)["stats"]
                first, last = store._db.execute(
                    "SELECT MIN(created_at), MAX(created_at) FROM samples WHERE run_id = ?",
                    (run_id,)).fetchone()
                store.close()
                # from the first result made to the last: the actors' start-up left out
                driver.append({"workers": k, "samples_s": stats["elapsed_s"],
                               "per_s": round(a.n / stats["elapsed_s"]),
                               "steady_per_s": round((a.n - 1) / (last - first)),
                               "startup_s": round(stats["elapsed_s"] - (last - first), 2),
                               "driver_cpu_ms_per_result": round(1000 * cpu / a.n, 3)})
            out["driver"] = driver
        samples = build_task("qa", {"data": str(data_file)}).load().samples
        out["store"] = store_rate(work, a.n, a.payload, samples)
    finally:
        import ray as ray_module  # noqa: PLC0415 - the driver leaves the cluster first

        ray_module.shutdown()
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True)
    best = max(out["driver"], key=lambda d: d["steady_per_s"])
    out["saturates_at"] = {"workers": best["workers"], "steady_per_s": best["steady_per_s"]}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
