"""The embedded model on BFCL: assay's ``local`` path against raw llama-cpp-python.

In one process, on the first N entries (default 50) of a BFCL category (default
``simple_python``), with the embedded SmolLM2-135M-Instruct Q4_1 GGUF:

- ``raw``: llama-cpp-python as a user would call it by hand: its own ``Llama``
  (n_ctx=4096, n_threads=2), a prompt made of the tool schema (system) and the
  question (user), ``create_chat_completion`` with ``response_format`` holding
  the JSON Schema of one call ``{"name": <const>, "arguments": <parameters>}``,
  greedy, the same max tokens as assay's BFCL run;
- ``assay``: the shared ``LocalModel`` driven exactly as ``assay run bfcl``
  drives it (``BFCLTask.solve``: fc mode, ``tool_choice="auto"``).

Both answers are scored with assay's official BFCL checker, so accuracy is
compared on equal terms. The two paths alternate entry by entry (which one
goes first flips every entry), so noise from the shared machine hits both.
``--engine`` adds one whole ``assay.api.evaluate`` run afterwards (engine,
store and reports included, cache off), reported separately.

Prints JSON: seconds per call, output and prompt tokens, the assay/raw ratio
(of total time, and the median of the per-entry ratios), accuracy, the
entries where the two verdicts differ, and the local model's counters (tokens
fed as grammar-forced text, full-vocabulary masks).
Usage: python bench/embedded.py [--limit 50] [--category simple_python]
[--bfcl-data-dir DIR] [--max-tokens 512] [--engine]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from assay.core.types import Message, Outcome, Sample, ToolCall, ToolSpec  # noqa: E402
from assay.models.local_model import (  # noqa: E402
    LocalModel,
    _plain_cpu_buffers,
    default_model_path,
)
from assay.tasks.bfcl.prompts import add_language_hints  # noqa: E402
from assay.tasks.bfcl.task import BFCLTask  # noqa: E402

N_CTX = 4096
N_THREADS = 2


class RawLlama:
    """The baseline: plain llama-cpp-python, schema-constrained, one call per answer."""

    def __init__(self, path: Path) -> None:
        from llama_cpp import Llama

        # with the same plain CPU buffers as LocalModel: on a CPU with AMX, llama-cpp-python
        # 0.3.x crashes (SIGSEGV) on its first batch with the repacked ones
        with _plain_cpu_buffers():
            self.llama = Llama(model_path=str(path), n_ctx=N_CTX, n_threads=N_THREADS,
                               seed=0, verbose=False)

    @staticmethod
    def schema(tools: list[ToolSpec]) -> dict[str, Any]:
        """One call to one of ``tools``."""
        options = [{"type": "object",
                    "properties": {"name": {"const": t.name}, "arguments": t.parameters},
                    "required": ["name", "arguments"]} for t in tools]
        return options[0] if len(options) == 1 else {"anyOf": options}

    def call(self, question: list[Message], tools: list[ToolSpec],
             max_tokens: int) -> tuple[list[ToolCall] | None, str, int, int]:
        """(calls, text, output tokens, prompt tokens) for one question."""
        listing = json.dumps([{"name": t.name, "description": t.description,
                               "parameters": t.parameters} for t in tools])
        messages = [{"role": "system", "content": listing}] + [
            {"role": m.role, "content": m.content or ""} for m in question]
        out = self.llama.create_chat_completion(
            messages=messages, max_tokens=max_tokens, temperature=0.0,
            response_format={"type": "json_object", "schema": self.schema(tools)})
        text = out["choices"][0]["message"].get("content") or ""
        usage = out.get("usage") or {}
        tokens, prompt = int(usage.get("completion_tokens", 0)), int(usage.get("prompt_tokens", 0))
        try:
            data = json.loads(text)
        except ValueError:
            return None, text, tokens, prompt
        args = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
        return [ToolCall(str(data.get("name", "")), args, "call_0")], text, tokens, prompt


class Recording:
    """Wraps the LocalModel to keep the usage of its last reply (solve drops it)."""

    def __init__(self, model: LocalModel) -> None:
        self.model = model
        self.output_tokens = 0
        self.prompt_tokens = 0

    async def generate(self, messages: list[Message], **kw: Any) -> Any:
        reply = await self.model.generate(messages, **kw)
        self.output_tokens = reply.usage.output_tokens
        self.prompt_tokens = reply.usage.input_tokens
        return reply


def run_pair(bench: BFCLTask, samples: list[Sample], raw: RawLlama,
             model: LocalModel, max_tokens: int) -> dict[str, Any]:
    """Both paths over ``samples``, alternating which goes first."""
    rec = Recording(model)
    forced0, masks0 = model._greedy.forced_tokens, model._greedy.full_masks
    totals: dict[str, dict[str, Any]] = {
        p: {"seconds": 0.0, "output_tokens": 0, "prompt_tokens": 0, "correct": 0, "no_call": 0}
        for p in ("raw", "assay")}
    per_entry = []

    def do_raw(s: Sample) -> tuple[bool, float]:
        question = s.input if isinstance(s.input, list) else [Message("user", str(s.input))]
        t = time.perf_counter()
        tools = s.tools or bench._tools(add_language_hints(s.metadata["functions"],
                                                           s.metadata["language"]))
        calls, text, tokens, prompt = raw.call(question, tools, max_tokens)
        took = time.perf_counter() - t
        totals["raw"]["seconds"] += took
        totals["raw"]["output_tokens"] += tokens
        totals["raw"]["prompt_tokens"] += prompt
        outcome = Outcome(transcript=[], output=text, tool_calls=calls, metadata={"mode": "fc"})
        totals["raw"]["no_call"] += calls is None
        ok = bench.score(s, outcome)[0].value == 1.0
        totals["raw"]["correct"] += ok
        return ok, took

    def do_assay(s: Sample) -> tuple[bool, float]:
        t = time.perf_counter()
        outcome = asyncio.run(bench.solve(s, rec))
        took = time.perf_counter() - t
        totals["assay"]["seconds"] += took
        totals["assay"]["output_tokens"] += rec.output_tokens
        totals["assay"]["prompt_tokens"] += rec.prompt_tokens
        totals["assay"]["no_call"] += not outcome.tool_calls
        ok = bench.score(s, outcome)[0].value == 1.0
        totals["assay"]["correct"] += ok
        return ok, took

    for i, s in enumerate(samples):
        if i % 2 == 0:
            r, a = do_raw(s), do_assay(s)
        else:
            a, r = do_assay(s), do_raw(s)
        per_entry.append((s.id, r[0], a[0], a[1] / r[1]))
    n = len(samples)
    out: dict[str, Any] = {}
    for p, t in totals.items():
        out[p] = {"seconds_per_call": round(t["seconds"] / n, 4),
                  "seconds": round(t["seconds"], 2),
                  "output_tokens": t["output_tokens"],
                  "correct": t["correct"], "accuracy": round(t["correct"] / n, 4),
                  "prompt_tokens": t["prompt_tokens"], "no_call": t["no_call"]}
    greedy = model._greedy
    out["assay"]["forced_tokens"] = greedy.forced_tokens - forced0
    out["assay"]["full_vocabulary_masks"] = greedy.full_masks - masks0
    out["ratio_assay_to_raw"] = round(totals["assay"]["seconds"] / totals["raw"]["seconds"], 3)
    out["ratio_median_per_entry"] = round(statistics.median(e[3] for e in per_entry), 3)
    out["disagreements"] = [e[0] for e in per_entry if e[1] != e[2]]
    return out


def engine_run(args: argparse.Namespace) -> dict[str, Any]:
    """One whole ``assay.api.evaluate`` run (cache off, fresh workspace)."""
    from assay.api import evaluate

    home = tempfile.mkdtemp(prefix="assay-bench-")
    old = os.environ.get("ASSAY_HOME")
    data_dir = args.bfcl_data_dir or str(_data_dir())
    os.environ["ASSAY_HOME"] = home
    try:
        t = time.perf_counter()
        result = evaluate("bfcl", model="local", category=args.category, limit=args.limit,
                          bfcl_data_dir=data_dir, cache=False, max_tokens=args.max_tokens)
        wall = time.perf_counter() - t
    finally:
        if old is None:
            os.environ.pop("ASSAY_HOME", None)
        else:
            os.environ["ASSAY_HOME"] = old
    acc = result.metrics["accuracy"]
    return {"wall_s": round(wall, 2), "seconds_per_call": round(wall / args.limit, 4),
            "correct": acc["successes"], "accuracy": acc["value"],
            "errors": result.metrics.get("n_errors")}


def _data_dir() -> Path:
    from assay.tasks.bfcl.data import locate

    return locate(None).path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--category", default="simple_python")
    ap.add_argument("--bfcl-data-dir", default=None)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--engine", action="store_true",
                    help="also time one whole assay.api.evaluate run (after the pair)")
    args = ap.parse_args()

    bench = BFCLTask(category=args.category, bfcl_data_dir=args.bfcl_data_dir,
                          max_tokens=args.max_tokens)
    samples = bench.samples()[: args.limit]
    path = default_model_path()
    t = time.perf_counter()
    raw = RawLlama(path)
    model = LocalModel.load()
    load_s = time.perf_counter() - t
    # One untimed call each, so first-call setup (thread pool, buffers) is not billed;
    # an unrelated prompt, so no entry's prompt is already in either KV cache.
    raw.llama.create_chat_completion(messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    asyncio.run(model.generate([Message("user", "Hi")], max_tokens=4))

    result = {"category": args.category, "n": len(samples), "max_tokens": args.max_tokens,
              "cpu_count": os.cpu_count(), "load_s": round(load_s, 2),
              **run_pair(bench, samples, raw, model, args.max_tokens)}
    if args.engine:
        result["engine"] = engine_run(args)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
