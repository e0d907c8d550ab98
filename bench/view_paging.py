"""How fast ``assay view`` pages a large run: a 100,000-sample run against a 1,000-sample one.

Builds both runs in a temporary store (direct INSERTs in one transaction, then the metrics
computed and stored as the engine does when a run ends), starts the real server on
127.0.0.1 and times real HTTP GETs (``time.perf_counter``) of: the run's first page, a
filtered page (wrong answers only), a deep page (page 1000 of the large run; the small run
clamps it to its last page), one sample's page and the runs list. Each is fetched
``--repeat`` times; the first (cold) fetch and the median are reported. Also times a
copy of the large run that stored no metrics: its first page (which offers to compute
them), the page that computes them (``?metrics=compute``, read-only, once) and the
first page again (now from memory).

Prints JSON: seconds per page and size, large/small ratios, and ``pass`` for "the large
run's first page loads in under 1 s" (cold and median).
Usage: python bench/view_paging.py [--samples 100000] [--baseline 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from assay.engine.finalize import finalize
from assay.store.schema import INSERT_SAMPLE
from assay.store.sqlite import Store
from assay.web.server import serve


def build_run(store: Store, n: int, *, metrics: bool = True) -> str:
    """A finished qa run of ``n`` samples: every 10th an error, every 3rd wrong, 5
    categories, a two-message transcript of a few hundred bytes each."""
    rid = store.create_run(task="qa", spec={"task": "qa", "epochs": 1},
                           model={"model": "openai/bench"},
                           dataset={"source": "bench", "selected": n}, package_version="bench")
    now = time.time()
    filler = "lorem ipsum dolor sit amet " * 8

    def rows() -> Any:
        for i in range(n):
            err = "HTTP 500 from the endpoint" if i % 10 == 9 else None
            value = 0.0 if i % 3 == 0 else 1.0
            scores = "{}" if err else json.dumps({"exact": {
                "name": "exact", "value": value, "answer": str(i), "explanation": "compared",
                "metadata": {"extraction": "full"}}})
            transcript = json.dumps([{"role": "user", "content": f"question {i} {filler}"},
                                     {"role": "assistant", "content": f"answer {i}"}])
            yield (rid, f"q{i:06d}", 0, i, json.dumps(f"question {i} {filler}"),
                   json.dumps(str(i)), transcript, f"answer {i}", str(i), scores, err, 0.2,
                   40, 3, 1, 0, json.dumps({"category": f"c{i % 5}"}), now + i * 1e-6,
                   0.2, 0.0, None, None)

    store._db.executemany(INSERT_SAMPLE, rows())
    store._db.commit()
    store.set_run_status(rid, "finished")
    if metrics:
        finalize(store, rid, exports=False)
    return rid


class Served:
    """``assay view`` on a background thread."""

    def __init__(self, store_path: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        fut = asyncio.run_coroutine_threadsafe(serve(store_path=store_path), self.loop)
        self.url, self.runner = fut.result(30)
        self.base = self.url.rstrip("/")

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def fetch(url: str) -> tuple[float, int, int]:
    """``(seconds, status, bytes)`` of one GET."""
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        body = r.read()
        status = r.status
    return time.perf_counter() - t0, status, len(body)


def measure(base: str, rid: str, repeat: int) -> dict[str, Any]:
    """Cold and median seconds of each page of run ``rid``."""
    pages = {"first_page": f"/run/{rid}", "wrong_only": f"/run/{rid}?verdict=wrong",
             "deep_page_1000": f"/run/{rid}?page=1000",
             "sample_page": f"/run/{rid}/sample/q000500?epoch=0", "runs_list": "/"}
    out: dict[str, Any] = {}
    for name, path in pages.items():
        times = []
        for _ in range(repeat):
            seconds, status, size = fetch(base + path)
            assert status == 200, (path, status)
            times.append(seconds)
        out[name] = {"cold_s": round(times[0], 4), "median_s": round(statistics.median(times), 4),
                     "bytes": size}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--baseline", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="assay-view-bench-") as tmp:
        path = Path(tmp) / "assay.db"
        store = Store(path)
        t0 = time.perf_counter()
        small = build_run(store, args.baseline)
        large = build_run(store, args.samples)
        bare = build_run(store, args.samples, metrics=False)
        build_s = time.perf_counter() - t0
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        store.close()
        served = Served(path)
        try:
            result_small = measure(served.base, small, args.repeat)
            result_large = measure(served.base, large, args.repeat)
            no_metrics = {"first_page_s": fetch(f"{served.base}/run/{bare}")[0],
                          "compute_on_request_s":
                              fetch(f"{served.base}/run/{bare}?metrics=compute")[0],
                          "first_page_after_s": fetch(f"{served.base}/run/{bare}")[0]}
        finally:
            served.close()
        size_mb = os.path.getsize(path) / 1e6
    ratios = {k: round(result_large[k]["median_s"] / max(result_small[k]["median_s"], 1e-9), 2)
              for k in result_large}
    first = result_large["first_page"]
    print(json.dumps({
        "samples": args.samples, "baseline_samples": args.baseline, "repeat": args.repeat,
        "store_mb": round(size_mb, 1), "build_s": round(build_s, 2),
        "large": result_large, "baseline": result_small, "ratio_large_to_baseline": ratios,
        "run_without_stored_metrics": {k: round(v, 4) for k, v in no_metrics.items()},
        "pass": {"first_page_under_1s": first["cold_s"] < 1.0 and first["median_s"] < 1.0},
    }, indent=1))


if __name__ == "__main__":
    main()
