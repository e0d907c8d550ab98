"""What a run costs, where it stops, and what a batch saves: ``assay run qa`` as a whole
process against the fake OpenAI server (real HTTP, this process's background thread), each
figure beside its baseline from the same run:

* **cost**: the run's stored cost against a hand computation from the server's own token
  counts and the price file (equal: ``difference_usd`` 0);
* **limit**: ``--cost-limit`` at ``-c C``: what went past the limit against the cost of the
  samples that were in flight (at most ``C`` of them);
* **batch**: the same N samples direct and with ``--batch``: HTTP requests the server saw,
  and the cost (the batch at half the price).

Prints JSON. Usage: python bench/cost.py [--n 200] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from assay.testing import FakeServer

PRICE_IN, PRICE_OUT = 2.5, 10.0  # USD per million tokens


def run(home: Path, *args: str) -> str:
    env = {**os.environ, "ASSAY_HOME": str(home), "OPENAI_API_KEY": "sk-bench"}
    p = subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True,
                       env=env, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(p.stderr)
    return p.stdout.split()[1]


def stats(home: Path, run_id: str) -> dict:
    con = sqlite3.connect(home / "assay.db")
    try:
        return json.loads(con.execute("SELECT stats FROM runs WHERE id = ?",
                                      (run_id,)).fetchone()[0])
    finally:
        con.close()


def by_hand(usages: list[dict], share: float = 1.0) -> float:
    return sum(u["prompt_tokens"] * PRICE_IN + u["completion_tokens"] * PRICE_OUT
               for u in usages) * share / 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=8)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="assay-bench-cost-"))
    data = tmp / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Question {i}: "
                                        + "word " * (5 + i % 17), "answer": "x"}) + "\n"
                            for i in range(a.n)), encoding="utf-8")
    prices = tmp / "prices.yaml"
    prices.write_text(f"openai/fake: {{input: {PRICE_IN}, output: {PRICE_OUT}}}\n",
                      encoding="utf-8")
    out: dict = {"n": a.n, "concurrency": a.concurrency}
    with FakeServer(batch_polls=3) as srv:
        common = ["run", "qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                  srv.base_url, "--pricing", str(prices), "-q", "--no-cache",
                  "-c", str(a.concurrency)]
        home = tmp / "direct"
        rid = run(home, *common)
        direct_usd, direct_http = stats(home, rid)["cost"]["usd"], sum(srv.http_requests.values())
        out["cost"] = {"reported_usd": direct_usd, "by_hand_usd": by_hand(srv.usages),
                       "difference_usd": abs(direct_usd - by_hand(srv.usages))}
        srv.reset()
        limit = by_hand([{"prompt_tokens": 1, "completion_tokens": 1}]) * 300
        home = tmp / "limit"
        rid = run(home, *common, "--cost-limit", str(limit))
        each = [by_hand([u]) for u in srv.usages]
        out["limit"] = {"limit_usd": limit, "spent_usd": stats(home, rid)["cost"]["usd"],
                        "overshoot_usd": sum(each) - limit,
                        "in_flight_bound_usd": a.concurrency * max(each),
                        "samples_run": len(each), "stopped": stats(home, rid).get("stopped")}
        srv.reset()
        home = tmp / "batch"
        common = [c for c in common if c != "--no-cache"]
        rid = run(home, *common, "--batch", "--batch-poll", "0.01")
        out["batch"] = {"http_requests_direct": direct_http,
                        "http_requests_batch": sum(srv.http_requests.values()),
                        "by_endpoint": dict(srv.http_requests),
                        "chat_requests_batch": len(srv.requests),
                        "cost_direct_usd": direct_usd,
                        "cost_batch_usd": stats(home, rid)["cost"]["usd"],
                        "cost_batch_by_hand_usd": by_hand(srv.usages, 0.5)}
        out["batch"]["cost_ratio"] = out["batch"]["cost_batch_usd"] / direct_usd
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
