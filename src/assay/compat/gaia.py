"""The book's GAIA classes: ``GAIADataset`` (book items over the core loader
:func:`assay.tasks.gaia.dataset.load_gaia`), ``GAIAEvaluator`` and ``GAIAEvaluationTool``
(the ``gaia`` task, official scorer, in the workspace store; the book's result keys)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.compat.runs import agent_name, evaluate, run_metrics, write_run_reports
from assay.store.sqlite import Store
from assay.tasks.gaia.dataset import GAIA_REPO, OFFICIAL_COUNTS, GAIAData, load_gaia
from assay.tasks.gaia.export import write_jsonl
from assay.tasks.gaia.layouts import GAIAQuestion, check_split, config_level, level_arg


def book_item(task: GAIAQuestion) -> dict[str, Any]:
    """The item shape of the book's ``GAIADataset`` for one task record."""
    return {"task_id": task.task_id, "question": task.question, "level": task.level,
            "final_answer": task.final_answer, "file_name": task.file_name,
            "file_path": str(task.file_path) if task.file_path else "",
            "annotator_metadata": dict(task.annotator_metadata), "steps": task.steps,
            "tools": list(task.tools) if isinstance(task.tools, list) else task.tools,
            "raw_item": task.raw}


class GAIADataset:
    """``GAIADataset(local_data_dir=..., split=..., level=...).load()``: book items
    (:func:`book_item`) over local files or a Hub snapshot; ``.tasks`` holds the core records."""

    def __init__(self, dataset_name: str = GAIA_REPO, split: str = "validation",
                 level: int | None = None, local_data_dir: str | Path | None = None,
                 config: str = "2023_all", token: str | None = None,
                 max_attachment_check: bool = True) -> None:
        check_split(split)
        config_level(config)
        self.dataset_name = dataset_name
        self.split = split
        self.level = level_arg(level) if level is not None else None
        self.local_data_dir = local_data_dir
        self.config = config
        self.token = token
        self.max_attachment_check = max_attachment_check
        self.tasks: list[GAIAQuestion] = []
        self.data: list[dict[str, Any]] = []
        self.metadata_file: Path | None = None
        self.layout: str | None = None
        self.root: Path | None = None
        self._loaded: GAIAData | None = None

    def load(self) -> list[dict[str, Any]]:
        """Read the tasks (downloading first when no local folder is given)."""
        loaded = load_gaia(self.local_data_dir, split=self.split, config=self.config,
                           level=self.level, dataset_name=self.dataset_name, token=self.token,
                           check_attachments=self.max_attachment_check)
        self._loaded = loaded
        self.root, self.metadata_file, self.layout = (loaded.root, loaded.metadata_file,
                                                      loaded.layout)
        self.tasks = loaded.tasks
        self.data = [book_item(t) for t in loaded.tasks]
        return self.data

    def _ensure(self) -> GAIAData:
        if self._loaded is None:
            self.load()
        assert self._loaded is not None
        return self._loaded

    @property
    def answers_public(self) -> bool:
        """False when any gold answer is hidden (``"?"``, as in the test split)."""
        return self._ensure().answers_public

    def get_level_distribution(self) -> dict[int, int]:
        return self._ensure().level_distribution()

    def get_by_level(self, level: int | str) -> list[dict[str, Any]]:
        want = level_arg(level)
        return [book_item(t) for t in self._ensure().tasks if t.level == want]

    def get_statistics(self) -> dict[str, Any]:
        """Counts as in the book, plus answer availability and where the data came from."""
        loaded = self._ensure()
        dist = loaded.level_distribution()
        full = self.level is None and self.config == "2023_all"
        official = OFFICIAL_COUNTS[self.split]
        tasks = loaded.tasks
        return {
            "total_samples": len(tasks),
            "level_distribution": dist,
            "samples_with_files": sum(1 for t in tasks if t.has_file),
            "missing_attachments": sum(1 for t in tasks if t.has_file and not t.file_path),
            "answers_public": loaded.answers_public,
            "hidden_answers": sum(1 for t in tasks if not t.answer_public),
            "split": self.split,
            "config": self.config,
            "level": self.level,
            "source": loaded.source,
            "official_counts": dict(official),
            "matches_official_counts": (dist == official) if full else None,
        }

    def source_info(self) -> dict[str, Any]:
        """Identity of the data, recorded with each run."""
        return self._ensure().source_info()

    def __len__(self) -> int:
        return len(self._ensure().tasks)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._ensure()
        return iter(list(self.data))


class GAIAEvaluator:
    """``GAIAEvaluator(dataset=..., level=...)``: official scoring; ``strict_mode=False``
    uses the book's ``lenient`` rules (bugs fixed) instead of the leaderboard's."""

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

    def evaluate(self, agent: Any, max_samples: int | None = None,
                 resume: str | None = None) -> dict[str, Any]:
        """Run the agent on GAIA; the book's result dict; ``resume``: a run id to continue."""
        options = {"data_dir": self.data_dir, "split": self.split, "level": self.level,
                   "scorer": "official" if self.strict_mode else "lenient"}
        return evaluate(self, "gaia", options, agent, max_samples, resume)

    def _book_results(self, store: Store, run_id: str, agent: Any, elapsed: float
                      ) -> dict[str, Any]:
        results = store.results(run_id)
        m = run_metrics(store, run_id)
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
            "benchmark": "GAIA", "agent_name": agent_name(agent),
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
    """``GAIAEvaluationTool().run(agent=..., level=..., max_samples=...)``: the book's result
    keys, with the submission file, its guide and the report written."""

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
            paths = write_run_reports(results["run_id"])
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
