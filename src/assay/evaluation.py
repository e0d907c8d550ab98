"""The HelloAgents book's evaluation API, on top of assay's engine.

Users of the book's chapter keep their code: the same class names, arguments
and result keys, but the verdicts are the official ones and every run lands in
the workspace store (resumable, cached, reportable)::

    from assay.evaluation import BFCLDataset, BFCLEvaluator, BFCLEvaluationTool

    evaluator = BFCLEvaluator(category="simple_python")
    results = evaluator.evaluate(agent, max_samples=20)
    evaluator.export_to_bfcl_format(results, "result/BFCL_v4_simple_python_result.json")

``agent`` is anything with ``run(prompt) -> str`` (sync or async), a factory
returning one, or a model spec string such as ``"local"`` or ``"openai/gpt-4o"``.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from assay.benchmarks.bfcl.data import BFCLDataset
from assay.core.types import Message, Reply, ToolSpec
from assay.engine.runner import Engine, RunSpec
from assay.store.sqlite import Store

__all__ = ["BFCLDataset", "BFCLEvaluator", "BFCLEvaluationTool"]


class _ObjectAgent:
    """Adapts a user object with ``run(prompt)`` to the model protocol (text only)."""

    cacheable = False
    text_only = True

    def __init__(self, agent: Any) -> None:
        self._agent = agent
        self.model_id = f"python/{getattr(agent, 'name', None) or type(agent).__name__}"

    async def generate(self, messages: list[Message], *, tools: list[ToolSpec] | None = None,
                       response_schema: dict[str, Any] | None = None, **params: Any) -> Reply:
        from assay.models.python_agent import PythonAgent

        return await PythonAgent(self._agent, self.model_id).generate(messages)


class _ObjectSubject:
    """A subject around a user's agent object (the same object answers every sample)."""

    def __init__(self, agent: Any) -> None:
        self._model = _ObjectAgent(agent)
        self.model_id = self._model.model_id

    def session(self) -> _ObjectAgent:
        return self._model

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_id}

    async def aclose(self) -> None:
        return None


def _subject(agent: Any) -> Any:
    from assay.models.base import get_subject

    if isinstance(agent, str):
        return get_subject(agent)
    return _ObjectSubject(agent)


def _run(coro: Any) -> Any:
    from assay.engine.loop import run

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run(coro)
    raise RuntimeError("call this from synchronous code (an event loop is already running)")


class BFCLEvaluator:
    """``BFCLEvaluator(dataset=..., category=..., evaluation_mode="ast")``.

    ``mode`` chooses how the agent is driven (``"prompt"`` for text agents, the
    book's setting; ``"fc"`` for native tool calls with model specs).
    """

    def __init__(self, dataset: BFCLDataset | None = None, category: str | None = None,
                 evaluation_mode: str = "ast", local_data_dir: str | None = None,
                 mode: str = "prompt", store: Store | None = None) -> None:
        if evaluation_mode not in ("ast", "execution"):
            raise ValueError("evaluation_mode must be 'ast' (execution is scored as ast)")
        self.dataset = dataset
        self.category = category or (dataset.category if dataset else "simple_python")
        self.data_dir = str(dataset.bfcl_data_dir) if dataset else local_data_dir
        self.evaluation_mode = evaluation_mode
        self.mode = mode
        self.store = store
        self.last_run_id: str | None = None

    def evaluate(self, agent: Any, max_samples: int | None = None) -> dict[str, Any]:
        """Run the agent; returns the book's result dict (official verdicts)."""
        store = self.store or Store()
        try:
            spec = RunSpec(benchmark="bfcl", model="python/agent", limit=max_samples or None,
                           benchmark_options={"category": self.category, "mode": self.mode,
                                              "bfcl_data_dir": self.data_dir})
            subject = _subject(agent)
            if isinstance(agent, str):
                spec.model = agent
            started = time.perf_counter()
            run_id = _run(Engine(store, quiet=True).run(spec, subject=subject))
            self.last_run_id = run_id
            return self._book_results(store, run_id, agent, time.perf_counter() - started)
        finally:
            if self.store is None:
                store.close()

    def _book_results(self, store: Store, run_id: str, agent: Any, elapsed: float
                      ) -> dict[str, Any]:
        from assay.benchmarks.bfcl.metrics import bfcl_metrics

        results = store.results(run_id)
        m = bfcl_metrics(results)
        detailed = []
        for r in results:
            s = (r.scores or {}).get("bfcl") or {}
            meta = s.get("metadata") or {}
            detailed.append({
                "sample_id": r.sample_id, "category": (r.metadata or {}).get("category"),
                "success": s.get("value") == 1.0, "score": s.get("value", 0.0),
                "predicted": s.get("answer"), "expected": r.target, "response": r.output,
                "raw": meta.get("raw"), "error_type": meta.get("error_type"),
                "question": r.input, "execution_time": r.latency_s,
                **({"error": r.error} if r.error else {}),
            })
        correct = m["accuracy"]["successes"]
        return {
            "benchmark": "BFCL", "agent_name": getattr(agent, "name", None) or str(agent),
            "evaluation_mode": self.evaluation_mode, "category": self.category,
            "total_samples": len(results), "correct_samples": correct,
            "overall_accuracy": correct / len(results) if results else 0.0,
            "category_metrics": {
                c: {"total": p["n"] + p["errors"], "correct": p["successes"],
                    "accuracy": p["value"] or 0.0}
                for c, p in m["categories"].items()
            },
            "detailed_results": detailed, "metrics": m, "run_id": run_id,
            "elapsed_s": elapsed,
        }

    def export_to_bfcl_format(self, results: dict[str, Any], output_path: str | Path,
                              include_inference_log: bool = True) -> Path:
        """Write the official result-file lines (``{"id", "result"}``) of one result dict."""
        out = Path(output_path)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "w", encoding="utf-8") as f:
            for d in results["detailed_results"]:
                if d.get("raw") is None:
                    continue
                line: dict[str, Any] = {"id": d["sample_id"], "result": d["raw"]}
                if include_inference_log:
                    line["inference_log"] = [{"role": "assistant", "content": d["response"]}]
                f.write(json.dumps(line, ensure_ascii=False) + "\n")
        return out


class BFCLEvaluationTool:
    """``BFCLEvaluationTool().run(agent=..., category=..., max_samples=..., run_official_eval=...,
    model_name=...)`` returning ``overall_accuracy``, ``correct_samples``, ``total_samples``
    and ``category_metrics``, with result files and a report written like the book's."""

    def __init__(self, bfcl_data_dir: str | None = None, project_root: str | None = None) -> None:
        self.bfcl_data_dir = bfcl_data_dir
        self.project_root = Path(project_root or ".")

    def run(self, agent: Any, category: str = "simple_python", max_samples: int | None = 5,
            run_official_eval: bool = False, model_name: str | None = None,
            mode: str = "prompt") -> dict[str, Any]:
        """Evaluate, export official result files, write a report; optionally run the official tool."""
        evaluator = BFCLEvaluator(category=category, local_data_dir=self.bfcl_data_dir, mode=mode)
        results = evaluator.evaluate(agent, max_samples=max_samples)
        from assay.benchmarks.bfcl.categories import expand, result_group

        name = (model_name or "assay-agent").replace("/", "_")
        exports = []
        for cat in expand(category):
            rows = {"detailed_results": [d for d in results["detailed_results"]
                                         if d["category"] == cat]}
            path = (self.project_root / "result" / name / result_group(cat)
                    / f"BFCL_v4_{cat}_result.json")
            exports.append(str(evaluator.export_to_bfcl_format(rows, path, False)))
        results["result_files"] = exports
        results["report_file"] = str(self.generate_report(results))
        if run_official_eval:
            from assay.benchmarks.bfcl.official import run_official

            results["official"] = run_official(results["run_id"]).summary()
        return results

    def generate_report(self, results: dict[str, Any], output_file: str | Path | None = None
                        ) -> Path:
        """The run's Markdown report (written from the store)."""
        from assay.reports.render import write_reports

        store = Store()
        try:
            paths = write_reports(store, results["run_id"])
        finally:
            store.close()
        if output_file:
            Path(output_file).write_text(paths["markdown"].read_text(encoding="utf-8"),
                                         encoding="utf-8")
            return Path(output_file)
        return paths["markdown"]
