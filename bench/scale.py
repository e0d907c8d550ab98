"""Scale on one machine: samples/s, peak RSS and report time as the run grows.

For each size (default 10k, 30k, 100k qa samples) against one fake OpenAI-compatible
server at 0 ms latency (a subprocess), in the same run:

* ``assay run qa ... -c C -q --no-cache`` as a whole process: samples/s and peak RSS
  (from ``/proc``'s high-water mark via ``resource`` of the child);
* ``bench/plain_qa.py``, the same work by hand with aiohttp: samples/s (target: assay's
  rate at least 0.8x the plain script's);
* in a fresh process, the time to read the run's results back from the store
  (``Store.results``) and the time ``write_reports`` takes (target: under 2x the read),
  and the size of report.html (target: under 5 MB).

Prints one JSON object with a row per size. Usage:
python bench/scale.py [--sizes 10000,30000,100000] [--concurrency 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"), NO_COLOR="1")

REPORT_TIMING = """
import json, sys, time
from assay.store.sqlite import Store
from assay.reports.render import write_reports
store = Store()
run_id = store.list_runs(1)[0]["id"]
t = time.perf_counter(); results = store.results(run_id); read = time.perf_counter() - t
del results
t = time.perf_counter(); paths = write_reports(store, run_id); report = time.perf_counter() - t
print(json.dumps({"read_s": read, "report_s": report,
                  "html_bytes": paths["html"].stat().st_size,
                  "md_bytes": paths["markdown"].stat().st_size}))
"""


def measured(cmd: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Wall seconds, the child's own peak RSS (bytes, from wait4) and its stdout."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read() if proc.stdout else b""
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed:\n{out.decode()}\n{err.decode()}")
    return wall, usage.ru_maxrss * 1024, out.decode()


def start_server() -> tuple[subprocess.Popen[str], str]:
    rules = Path(tempfile.mkdtemp()) / "rules.json"
    rules.write_text(json.dumps([{"match": r"Repeat after me: (\S+)", "reply": "Answer: \\1"}]))
    proc = subprocess.Popen([sys.executable, "-m", "assay.testing.fake_server", "--port", "0",
                             "--rules", str(rules)], stdout=subprocess.PIPE, text=True, env=ENV)
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("READY "):
        proc.kill()
        raise SystemExit(f"fake server did not start: {line!r}")
    return proc, line.split()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,30000,100000")
    ap.add_argument("--concurrency", type=int, default=200)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="assay-scale-"))
    server, url = start_server()
    rows = []
    try:
        for n in [int(x) for x in args.sizes.split(",")]:
            data = work / f"q{n}.jsonl"
            data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Repeat after me: w{i}",
                                                "answer": f"w{i}"}) + "\n" for i in range(n)))
            home = work / f"home{n}"
            env = dict(ENV, ASSAY_HOME=str(home))
            plain_wall, plain_rss, _ = measured(
                [sys.executable, str(ROOT / "bench" / "plain_qa.py"), str(data), url,
                 str(work / f"plain{n}.jsonl"), str(args.concurrency)], ENV)
            wall, rss, out = measured(
                [sys.executable, "-m", "assay", "run", "qa", "--data", str(data), "--model",
                 "openai/fake", "--base-url", url, "-c", str(args.concurrency), "-q",
                 "--no-cache"], env)
            if "1.000" not in out:
                raise SystemExit(f"assay scored below 1.0 at n={n}:\n{out}")
            _, report_rss, rep = measured([sys.executable, "-c", REPORT_TIMING], env)
            rep = json.loads(rep)
            rows.append({
                "n": n,
                "assay_samples_per_s": round(n / wall, 1),
                "plain_samples_per_s": round(n / plain_wall, 1),
                "rate_ratio": round(plain_wall / wall, 3),
                "assay_peak_rss_mb": round(rss / 2**20, 1),
                "plain_peak_rss_mb": round(plain_rss / 2**20, 1),
                "read_results_s": round(rep["read_s"], 3),
                "write_reports_s": round(rep["report_s"], 3),
                "report_to_read_ratio": round(rep["report_s"] / rep["read_s"], 3),
                "report_process_peak_rss_mb": round(report_rss / 2**20, 1),
                "html_mb": round(rep["html_bytes"] / 2**20, 2),
                "md_mb": round(rep["md_bytes"] / 2**20, 2),
            })
            print(json.dumps(rows[-1]), file=sys.stderr)
    finally:
        server.terminate()
        server.wait()
    print(json.dumps({"concurrency": args.concurrency, "server_latency_s": 0.0, "rows": rows},
                     indent=2))


if __name__ == "__main__":
    main()
