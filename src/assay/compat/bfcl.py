"""The book's BFCL classes: ``BFCLDataset``, ``BFCLEvaluator``, ``BFCLEvaluationTool``, with
HelloAgents chapter 12's names, arguments and result keys; the verdicts are the official
checker's and every run lands in the workspace store."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.compat.runs import agent_name, evaluate, run_metrics, write_run_reports
from assay.core.atomic import atomic_open, atomic_write_text
from assay.errors import ConfigError
from assay.store.sqlite import Store
from assay.tasks.bfcl.categories import SINGLE_TURN, expand, result_group
from assay.tasks.bfcl.data import load_category, locate
from assay.tasks.bfcl.official import run_official


class BFCLDataset:
    """``BFCLDataset(bfcl_data_dir=..., category=...).load()``: the entries with
    ``ground_truth`` merged in; ``.ground_truth`` maps id to answer."""

    def __init__(self, bfcl_data_dir: str | Path | None = None,
                 category: str | None = "simple_python") -> None:
        self.source = locate(bfcl_data_dir)
        self.bfcl_data_dir = self.source.path
        self.category = category or "simple_python"
        self.categories = expand(self.category)
        self.data: list[dict[str, Any]] = []
        self.ground_truth: dict[str, list[dict[str, Any]]] = {}

    def load(self) -> list[dict[str, Any]]:
        """All entries of the selected categories, each with ``category`` and ``ground_truth``."""
        self.data, self.ground_truth = [], {}
        for cat in self.categories:
            cd = load_category(self.source, cat)
            self.ground_truth.update(cd.ground_truth)
            for e in cd.entries:
                gt = cd.ground_truth.get(e["id"], [])
                self.data.append({**e, "category": cat, "ground_truth": gt})
        return self.data

    def _ensure(self) -> None:
        if not self.data:
            self.load()

    def get_available_categories(self) -> list[str]:
        """Supported categories whose files exist in the data folder."""
        return [c for c in SINGLE_TURN if (self.source.path / f"BFCL_v4_{c}.json").is_file()]

    def get_ground_truth(self, sample_id: str) -> list[dict[str, Any]]:
        """Ground truth of one entry (empty for relevance categories)."""
        self._ensure()
        return self.ground_truth.get(sample_id, [])

    def get_sample(self, index: int) -> dict[str, Any]:
        self._ensure()
        return self.data[index]

    def __len__(self) -> int:
        self._ensure()
        return len(self.data)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._ensure()
        return iter(self.data)


def check_evaluation_mode(mode: str) -> str:
    """``ast`` is the only evaluation mode so far; anything else is a one-line error."""
    if mode == "execution":
        raise ConfigError("execution mode is not implemented yet; use evaluation_mode='ast'")
    if mode != "ast":
        raise ConfigError(f"unknown evaluation_mode {mode!r}; use evaluation_mode='ast'")
    return mode


class BFCLEvaluator:
    """``BFCLEvaluator(dataset=..., category=..., evaluation_mode="ast")``; ``mode`` drives the
    agent (``"prompt"``, the book's, for text agents; ``"fc"`` for native tool calls)."""

    def __init__(self, dataset: BFCLDataset | None = None, category: str | None = None,
                 evaluation_mode: str = "ast", local_data_dir: str | None = None,
                 mode: str = "prompt", store: Store | None = None) -> None:
        self.evaluation_mode = check_evaluation_mode(evaluation_mode)
        self.dataset = dataset
        self.category = category or (dataset.category if dataset else "simple_python")
        self.data_dir = str(dataset.bfcl_data_dir) if dataset else local_data_dir
        self.mode = mode
        self.store = store
        self.last_run_id: str | None = None

    def evaluate(self, agent: Any, max_samples: int | None = None,
                 resume: str | None = None) -> dict[str, Any]:
        """Run the agent; the book's result dict (official verdicts); ``resume``: a run id."""
        options = {"category": self.category, "mode": self.mode, "bfcl_data_dir": self.data_dir}
        return evaluate(self, "bfcl", options, agent, max_samples, resume)

    def _book_results(self, store: Store, run_id: str, agent: Any, elapsed: float
                      ) -> dict[str, Any]:
        results = store.results(run_id)
        m = run_metrics(store, run_id)
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
            "benchmark": "BFCL", "agent_name": agent_name(agent),
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
    """``BFCLEvaluationTool().run(agent=..., category=..., max_samples=...)``: the book's result
    keys, with official result files and a report written like the book's."""

    def __init__(self, bfcl_data_dir: str | None = None, project_root: str | None = None) -> None:
        self.bfcl_data_dir = bfcl_data_dir
        self.project_root = Path(project_root or ".")

    def run(self, agent: Any, category: str = "simple_python", max_samples: int | None = 5,
            run_official_eval: bool = False, model_name: str | None = None,
            mode: str = "prompt") -> dict[str, Any]:
        """Evaluate, export official result files, write a report; optionally the official tool."""
        evaluator = BFCLEvaluator(category=category, local_data_dir=self.bfcl_data_dir, mode=mode)
        results = evaluator.evaluate(agent, max_samples=max_samples)
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
            results["official"] = run_official(results["run_id"]).summary()
        return results

    def generate_report(self, results: dict[str, Any], output_file: str | Path | None = None
                        ) -> Path:
        paths = write_run_reports(results["run_id"])
        if output_file:
            atomic_write_text(Path(output_file), paths["markdown"].read_text(encoding="utf-8"),
                              encoding="utf-8")
            return Path(output_file)
        return paths["markdown"]
