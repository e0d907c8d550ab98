"""The agent's tools and loop, timed: prints JSON.

``python bench/tool_loop.py [--n 20] [--steps 10] [--latency 0.05]`` measures, in one run:

* ``bare_bwrap_python_s``: the baseline, a bare ``bwrap`` (the host's root read-only, all
  namespaces unshared) starting Python to run ``pass``, median of ``n``;
* ``python_tool_first_call_s``: the agent's ``python`` tool's first call in a sample (its
  sandbox session started, the attachment copied in, the call run), median of ``n`` samples;
* ``python_tool_warm_call_s``: a later call in the same session (``x += 1``), median of ``n``,
  and ``warm_call_overhead_ms`` (the goal: at most 50 ms);
* ``loop_overhead_per_step_ms``: the tool loop's own time per step (parsing the reply,
  dispatching the ``think`` tool, growing the transcript) beside the model's time per step,
  with a model that answers after ``--latency`` seconds and calls a tool ``--steps`` times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from assay.agents.loop import LoopLimits, tool_loop
from assay.agents.tools import ToolContext, make_tool
from assay.core.types import Message, Reply, ToolCall, Usage
from assay.sandbox import describe_isolation


def bare_bwrap(n: int) -> float:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SystemExit("bwrap is not installed (apt-get install bubblewrap)")
    cmd = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
           "--unshare-all", "--die-with-parent", sys.executable, "-I", "-c", "pass"]
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


async def python_tool(n: int, attachment: Path) -> tuple[float, float]:
    first, warm = [], []
    for _ in range(n):
        tool = make_tool("python", ToolContext(files=[attachment]))
        try:
            t0 = time.perf_counter()
            done = await tool.call({"code": "x = len(open('data.csv').read())"})
            first.append(time.perf_counter() - t0)
            assert not done.error, done.text
            t0 = time.perf_counter()
            done = await tool.call({"code": "x += 1"})
            warm.append(time.perf_counter() - t0)
            assert not done.error, done.text
        finally:
            await tool.aclose()
    return statistics.median(first), statistics.median(warm)


class TimedModel:
    """A model that takes ``latency`` s a step: ``steps`` tool calls, then an answer."""

    def __init__(self, latency: float, steps: int) -> None:
        self.latency, self.steps, self.usage = latency, steps, Usage()
        self.model_s = 0.0

    async def generate(self, messages: list[Message], **_: Any) -> Reply:
        t0 = time.perf_counter()
        await asyncio.sleep(self.latency)
        self.model_s += time.perf_counter() - t0
        done = sum(m.role == "tool" for m in messages)
        if done < self.steps:
            call = ToolCall("think", {"thought": f"step {done}"}, f"c{done}")
            return Reply(Message("assistant", None, tool_calls=[call]))
        return Reply(Message("assistant", "done"))


async def loop_overhead(latency: float, steps: int, n: int) -> tuple[float, float]:
    per_step = []
    for _ in range(n):
        model = TimedModel(latency, steps)
        tools = [make_tool("think", ToolContext())]
        t0 = time.perf_counter()
        done = await tool_loop(model, [Message("user", "go")], tools,
                               limits=LoopLimits(max_steps=steps + 1, max_repeats=steps + 1))
        wall = time.perf_counter() - t0
        assert done.ended == "answer" and done.steps == steps + 1
        per_step.append((wall - model.model_s) / done.steps)
    return statistics.median(per_step), latency


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        attachment = Path(tmp) / "data.csv"
        attachment.write_text("a,b\n" + "".join(f"{i},{i * i}\n" for i in range(1000)))
        bare = bare_bwrap(args.n)
        first, warm = asyncio.run(python_tool(args.n, attachment))
    loop_s, model_s = asyncio.run(loop_overhead(args.latency, args.steps, args.n))
    print(json.dumps({
        "n": args.n, "isolation": describe_isolation(),
        "bare_bwrap_python_s": round(bare, 4),
        "python_tool_first_call_s": round(first, 4),
        "first_call_over_bare_bwrap": round(first / bare, 2),
        "python_tool_warm_call_s": round(warm, 5),
        "warm_call_overhead_ms": round(warm * 1000, 2),
        "warm_call_goal_ms": 50,
        "loop_overhead_per_step_ms": round(loop_s * 1000, 3),
        "model_time_per_step_ms": round(model_s * 1000, 1),
        "loop_share_of_step": round(loop_s / (loop_s + model_s), 4),
    }, indent=1))


if __name__ == "__main__":
    main()
