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
from assay.benchmarks.gaia.dataset import GAIADataset
from assay.core.atomic import atomic_open, atomic_write_text
from assay.core.types import Message, Reply, ToolSpec
from assay.datagen.book import AIMEGenerator, HumanVerificationUI, LLMJudgeTool, WinRateTool
from assay.engine.runner import Engine, RunSpec
from assay.store.sqlite import Store

__all__ = ["AIMEGenerator", "BFCLDataset", "BFCLEvaluator", "BFCLEvaluationTool", "GAIADataset",
           "GAIAEvaluator", "GAIAEvaluationTool", "HumanVerificationUI", "LLMJudgeTool",
           "WinRateTool"]


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


def _subject(agent: Any) -> Any:
    from assay.models.base import Subject, get_subject

    if isinstance(agent, str):
        return get_subject(agent)
    return Subject(_ObjectAgent(agent))


def _run(coro: Any) -> Any:
    from assay.engine.loop import run

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run(coro)
    raise RuntimeError("call this from synchronous code (an event loop is already running)")


def run_agent(benchmark: str, options: dict[str, Any], agent: Any, max_samples: int | None,
              store: Store) -> tuple[str, float]:
    """Run ``benchmark`` for a user's agent object or a model spec; (run id, seconds)."""
    spec = RunSpec(benchmark=benchmark, model=agent if isinstance(agent, str) else "python/agent",
                   limit=max_samples or None, benchmark_options=options)
    started = time.perf_counter()
    run_id = _run(Engine(store, quiet=True).run(spec, subject=_subject(agent)))
    return run_id, time.perf_counter() - started


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
            run_id, elapsed = run_agent(
                "bfcl", {"category": self.category, "mode": self.mode,
                         "bfcl_data_dir": self.data_dir}, agent, max_samples, store)
            self.last_run_id = run_id
            return self._book_results(store, run_id, agent, elapsed)
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
        with atomic_open(out) as f:
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
            atomic_write_text(Path(output_file), paths["markdown"].read_text(encoding="utf-8"),
                                         encoding="utf-8")
            return Path(output_file)
        return paths["markdown"]


class GAIAEvaluator:
    """``GAIAEvaluator(dataset=..., level=...)``: the book's GAIA evaluator, official scoring.

    ``strict_mode`` picks the scorer: True (default) is the leaderboard's
    ``official`` rules, False the book's ``lenient`` rules (bugs fixed).
    """

    def __init__(self, dataset: GAIADataset | None = None, level: int | None = None,
                 local_data_dir: str | None = None, strict_mode: bool = True,
                 split: str | None = None, store: Store | None = None) -> None:
        self.dataset = dataset
        self.level = level if level is not None else (dataset.level if dataset else None)
        root = getattr(dataset, "local_data_dir", None) if dataset else None
        self.data_dir = str(root) if root else local_data_dir
        self.split = split or (dataset.split if dataset else "validation")
        self.strict_mode = strict_mode
        self.store = store
        self.last_run_id: str | None = None

    def evaluate(self, agent: Any, max_samples: int | None = None) -> dict[str, Any]:
        """Run the agent on GAIA; returns the book's result dict."""
        store = self.store or Store()
        try:
            options = {"data_dir": self.data_dir, "split": self.split, "level": self.level,
                       "scorer": "official" if self.strict_mode else "lenient"}
            run_id, elapsed = run_agent("gaia", options, agent, max_samples, store)
            self.last_run_id = run_id
            return self._book_results(store, run_id, agent, options, elapsed)
        finally:
            if self.store is None:
                store.close()

    def _book_results(self, store: Store, run_id: str, agent: Any, options: dict[str, Any],
                      elapsed: float) -> dict[str, Any]:
        from assay.benchmarks.gaia.metrics import gaia_metrics

        results = store.results(run_id)
        m = gaia_metrics(results, options)
        detailed = []
        for r in results:
            s = (r.scores or {}).get("gaia") or {}
            p = (r.scores or {}).get("gaia_partial") or {}
            detailed.append({
                "task_id": r.sample_id, "level": (r.metadata or {}).get("level"),
                "question": r.input, "predicted": s.get("answer"), "expected": r.target,
                "exact_match": s.get("value") == 1.0, "partial_match": p.get("value") == 1.0,
                "score": s.get("value"), "extraction": (s.get("metadata") or {}).get("extraction"),
                "response": r.output, "execution_time": r.latency_s,
                **({"error": r.error} if r.error else {}),
            })
        exact = sum(d["exact_match"] for d in detailed)
        partial = sum(d["partial_match"] for d in detailed)
        total = len(detailed)
        levels = {}
        for k, v in (m.get("level_accuracy") or {}).items():
            n = k.split("_")[1]
            levels[f"Level_{n}"] = {"total": v["n"], "exact_matches": v["successes"],
                                    "exact_match_rate": v["value"]}
        return {
            "benchmark": "GAIA", "agent_name": getattr(agent, "name", None) or str(agent),
            "strict_mode": self.strict_mode, "level_filter": self.level,
            "total_samples": total, "exact_matches": exact, "partial_matches": partial,
            "exact_match_rate": exact / total if total else 0.0,
            "partial_match_rate": partial / total if total else 0.0,
            "level_metrics": levels, "detailed_results": detailed, "metrics": m,
            "run_id": run_id, "elapsed_s": elapsed,
        }

    def export_to_gaia_format(self, results: dict[str, Any], output_path: str | Path,
                              include_reasoning: bool = True) -> Path:
        """Submission JSONL (task_id, model_answer as a string[, reasoning_trace])."""
        from assay.benchmarks.gaia.export import write_jsonl

        lines = []
        for d in results["detailed_results"]:
            line: dict[str, Any] = {"task_id": d["task_id"],
                                    "model_answer": "" if d["predicted"] is None
                                    else str(d["predicted"])}
            if include_reasoning:
                line["reasoning_trace"] = d.get("response") or ""
            lines.append(line)
        return write_jsonl(lines, Path(output_path))


class GAIAEvaluationTool:
    """``GAIAEvaluationTool().run(agent=..., level=..., max_samples=..., export_results=...,
    generate_report=...)`` returning ``exact_match_rate``, ``partial_match_rate``,
    ``exact_matches``, ``total_samples`` and ``level_metrics`` (the book's keys)."""

    def __init__(self, local_data_path: str | None = None,
                 output_dir: str | Path = "evaluation_results/gaia_official") -> None:
        self.local_data_path = local_data_path
        self.output_dir = Path(output_dir)

    def run(self, agent: Any, level: int | None = None, max_samples: int | None = None,
            local_data_dir: str | None = None, export_results: bool = True,
            generate_report: bool = True, split: str = "validation") -> dict[str, Any]:
        """Evaluate; export the submission file and its guide; write the report."""
        evaluator = GAIAEvaluator(level=level, split=split,
                                  local_data_dir=local_data_dir or self.local_data_path)
        results = evaluator.evaluate(agent, max_samples=max_samples)
        if export_results or generate_report:
            from assay.reports.render import write_reports

            store = Store()
            try:
                paths = write_reports(store, results["run_id"])
            finally:
                store.close()
            if export_results:
                self.output_dir.mkdir(parents=True, exist_ok=True)
                tag = f"level{level}" if level else "all"
                sub = self.output_dir / f"gaia_{tag}_result_{results['run_id']}.jsonl"
                sub.write_bytes(paths["gaia_submission"].read_bytes())
                guide = self.output_dir / f"SUBMISSION_GUIDE_{results['run_id']}.md"
                guide.write_bytes(paths["gaia_submission_guide"].read_bytes())
                results["result_file"], results["submission_guide"] = str(sub), str(guide)
            if generate_report:
                results["report_file"] = str(paths["markdown"])
        return results
