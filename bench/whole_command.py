"""What a user waits for: the whole ``assay run qa`` process against a plain script.

In the same run, alternately, against one fake OpenAI-compatible server (fixed latency,
in this process's background thread):

* ``assay run qa --data q.jsonl --model openai/fake --base-url URL -c C -q --no-cache``
  as a whole process (interpreter start, imports, data, run, store, metrics, reports);
* ``bench/plain_qa.py``: the same work by hand with aiohttp (read the JSONL, send every
  question, check each answer, write a JSONL).

Both run as installed code runs: from compiled bytecode (pip compiles a package when it
installs it). The children share a bytecode folder in this run's temporary folder, written
by one untimed warm-up of each, even where ``PYTHONDONTWRITEBYTECODE`` is set (an editable
checkout would otherwise compile every assay module on every run).

Prints JSON: median wall time of each, their ratio (target <= 1.25), and the busy
window as the server saw it (first to last request arrival) for each, with its ratio
to the ideal N*L/C (target <= 1.1). Usage:
python bench/whole_command.py [--n 1000] [--latency 0.05] [--concurrency 100] [--repeat 5]
"""

from __future__ import annotations

import argparse
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


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if p.returncode != 0 or "1.000" not in p.stdout:
        raise SystemExit(f"{cmd[:4]} failed or scored below 1.0:\n{p.stdout}\n{p.stderr}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from assay.testing import FakeServer, Rule

    work = Path(tempfile.mkdtemp(prefix="assay-whole-"))
    data = work / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Repeat after me: w{i}",
                                        "answer": f"w{i}"}) + "\n" for i in range(args.n)))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), NO_COLOR="1",
               PYTHONPYCACHEPREFIX=str(work / "bytecode"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    rules = [Rule(r"Repeat after me: (\S+)", "Answer: \\1")]
    walls: dict[str, list[float]] = {"assay": [], "plain": []}
    windows: dict[str, list[float]] = {"assay": [], "plain": []}
    with FakeServer(rules=rules, latency=args.latency) as srv:
        for i in range(-1, args.repeat):  # -1: the warm-up, not timed
            for name in ("assay", "plain") if i % 2 == 0 else ("plain", "assay"):
                srv.reset()
                if name == "assay":
                    home = work / f"home{i + 1}"
                    cmd = [sys.executable, "-m", "assay", "run", "qa", "--data", str(data),
                           "--model", "openai/fake", "--base-url", srv.base_url,
                           "-c", str(args.concurrency), "-q", "--no-cache"]
                    walls[name].append(timed(cmd, dict(env, ASSAY_HOME=str(home))))
                else:
                    cmd = [sys.executable, str(ROOT / "bench" / "plain_qa.py"), str(data),
                           srv.base_url, str(work / f"plain{i + 1}.jsonl"), str(args.concurrency)]
                    walls[name].append(timed(cmd, env))
                times = list(srv.request_times)
                assert len(times) == args.n, (name, len(times))
                windows[name].append(max(times) - min(times))
                if i < 0:
                    walls[name].pop()
                    windows[name].pop()
    ideal = args.n * args.latency / args.concurrency
    med = {k: statistics.median(v) for k, v in walls.items()}
    win = {k: statistics.median(v) for k, v in windows.items()}
    print(json.dumps({
        "n": args.n, "latency_s": args.latency, "concurrency": args.concurrency,
        "repeat": args.repeat,
        "assay_wall_s": round(med["assay"], 3), "plain_wall_s": round(med["plain"], 3),
        "ratio_whole_command": round(med["assay"] / med["plain"], 3),
        "assay_walls": [round(x, 3) for x in walls["assay"]],
        "plain_walls": [round(x, 3) for x in walls["plain"]],
        "ideal_window_s": ideal,
        "assay_window_s": round(win["assay"], 3), "plain_window_s": round(win["plain"], 3),
        "ratio_window_to_ideal": round(win["assay"] / ideal, 3),
        "plain_window_to_ideal": round(win["plain"] / ideal, 3),
    }, indent=2))


if __name__ == "__main__":
    main()
