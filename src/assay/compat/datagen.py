"""The book's data-generation classes: ``AIMEGenerator``, ``LLMJudgeTool``, ``WinRateTool``,
``HumanVerificationUI``. ``llm`` is a model spec string or a stateless ``HelloAgentsLLM``-style
object with ``invoke(messages) -> str`` (shared by every call). Every step is an ordinary
run in the workspace store; the tools return the book's JSON and write the book's files.
"""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any

from assay.compat.runs import run_metrics, run_task
from assay.core.atomic import atomic_write_text
from assay.core.checks import check_number
from assay.reports.render import write_reports
from assay.review.page import ReviewPage
from assay.store.sqlite import Store
from assay.tasks.datagen.generate import write_outputs
from assay.tasks.datagen.problem import load_problems, save_problems
from assay.tasks.datagen.references import load_reference
from assay.web.server import launch


def _run(store: Store, task: str, llm: Any, options: dict[str, Any],
         rpm: float | None = None) -> str:
    """One run with ``llm`` (default: the embedded model); its reports are written."""
    run_id, _ = run_task(task, options, "local" if llm is None else llm, store, shared=True,
                         rpm=rpm)
    write_reports(store, run_id)
    return run_id


class AIMEGenerator:
    """``AIMEGenerator(llm=..., delay_seconds=...).generate_and_save(num_problems, output_dir)``;
    ``delay_seconds`` between call starts is the engine's rate limit: ``rpm = 60 / delay``."""

    def __init__(self, llm: Any = None, delay_seconds: float = 1.0,
                 use_reference_examples: bool = True,
                 reference_dataset: str | None = "TianHongZXY/aime-1983-2025") -> None:
        check_number("delay_seconds", delay_seconds, minimum=0)
        self.llm = llm
        self.delay_seconds = delay_seconds
        self.reference = reference_dataset if use_reference_examples else "none"
        self.last_run_id: str | None = None

    def generate_and_save(self, num_problems: int = 30,
                          output_dir: str | Path = "data_generation/generated_data",
                          seed: int = 0) -> str:
        """Generate; write ``aime_generated_<run>.json`` (failures beside it); return its path."""
        with closing(Store()) as store:
            delay = float(self.delay_seconds or 0.0)
            run_id = _run(store, "datagen_generate", self.llm,
                          {"n": num_problems, "reference": self.reference, "seed": seed},
                          rpm=60.0 / delay if delay > 0 else None)
            self.last_run_id = run_id
            out = Path(output_dir) / f"aime_generated_{run_id}.json"
            return str(write_outputs(store, run_id, out)["problems"])


def _tool_result(store: Store, run_id: str, output_dir: Path, kind: str,
                 num_problems: int) -> str:
    metrics = run_metrics(store, run_id)
    output_dir.mkdir(parents=True, exist_ok=True)
    result_file = output_dir / f"{kind}_results_{run_id}.json"
    atomic_write_text(result_file, json.dumps({"run_id": run_id, "metrics": metrics}, indent=2,
                                              default=str), encoding="utf-8")
    report = write_reports(store, run_id)["markdown"]
    return json.dumps({"status": "success", "run_id": run_id, "metrics": metrics,
                       "num_problems": num_problems, "result_file": str(result_file),
                       "report_file": str(report)}, default=str)


def _reference_file(params: dict[str, Any], output_dir: Path) -> str | None:
    """``reference_data_path``, or the reference set (``reference_year`` is not a filter we
    can apply offline, so it selects the default AIME set) saved as JSONL."""
    if params.get("reference_data_path"):
        return str(params["reference_data_path"])
    if "reference_year" not in params:
        return None
    refs, _ = load_reference(None)
    return str(save_problems(refs, output_dir / "reference.jsonl"))


class LLMJudgeTool:
    """``LLMJudgeTool(llm=...).run({"generated_data_path": ..., "max_samples": ...,
    "output_dir": ..., "judge_model": ...})`` -> JSON string with ``status`` and ``metrics``."""

    def __init__(self, llm: Any = None) -> None:
        self.llm = llm

    def run(self, parameters: dict[str, Any]) -> str:
        """Judge the generated problems with the rubric; invalid verdicts are counted."""
        try:
            data = Path(parameters["generated_data_path"])
            out = Path(parameters.get("output_dir") or "evaluation_results/llm_judge")
            problems = load_problems(data)
            if parameters.get("max_samples"):
                problems = problems[: int(parameters["max_samples"])]
                data = save_problems(problems, out / "judged_subset.jsonl")
            llm = parameters.get("judge_model") if self.llm is None else self.llm
            with closing(Store()) as store:
                run_id = _run(store, "datagen_judge", llm,
                              {"data": str(data), "reference": _reference_file(parameters, out)})
                return _tool_result(store, run_id, out, "llm_judge", len(problems))
        except Exception as e:  # the book's tools report failures as JSON
            return json.dumps({"status": "error", "message": str(e)})


class WinRateTool:
    """``WinRateTool(llm=...).run({"generated_data_path", "reference_data_path" |
    "reference_year", "num_comparisons", "output_dir"})`` -> JSON with ``status``/``metrics``."""

    def __init__(self, llm: Any = None) -> None:
        self.llm = llm

    def run(self, parameters: dict[str, Any]) -> str:
        """Pairwise comparison in both orders against real problems."""
        try:
            out = Path(parameters.get("output_dir") or "evaluation_results/win_rate")
            ref = _reference_file(parameters, out)
            if ref is None:
                raise ValueError("WinRateTool needs reference_data_path or reference_year")
            llm = parameters.get("judge_model") if self.llm is None else self.llm
            with closing(Store()) as store:
                run_id = _run(store, "datagen_winrate", llm,
                              {"data": str(parameters["generated_data_path"]), "reference": ref,
                               "n_comparisons": parameters.get("num_comparisons"),
                               "seed": parameters.get("seed", 0)})
                n = run_metrics(store, run_id).get("n_pairs") or parameters.get("num_comparisons")
                return _tool_result(store, run_id, out, "win_rate", int(n or 0))
        except Exception as e:  # the book's tools report failures as JSON
            return json.dumps({"status": "error", "message": str(e)})


class HumanVerificationUI:
    """``HumanVerificationUI(data_path).launch()``: the review page on 127.0.0.1."""

    def __init__(self, data_path: str | Path, reviewer: str | None = None) -> None:
        self.data_path = Path(data_path)
        self.reviewer = reviewer

    def launch(self, port: int = 0, open_browser: bool = True, **kwargs: Any) -> None:
        """Serve until Ctrl-C; every submission is saved at once in the workspace store."""
        review = ReviewPage.from_file(self.data_path, self.reviewer,
                                      judge_scores=kwargs.pop("judge_scores", None),
                                      blind=kwargs.pop("blind", False))
        launch(review=review, port=port, open_browser=open_browser, **kwargs)
