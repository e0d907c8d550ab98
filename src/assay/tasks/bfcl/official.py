"""Run the official ``bfcl evaluate`` on a run's exported result files, beside our numbers.

Needs a full ``bfcl-eval`` install; runs in a subprocess with a scratch ``BFCL_PROJECT_ROOT`` (else
it writes into site-packages) and a dummy API key (reference/bfcl.md §9.1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.metrics.run import run_metrics
from assay.store.sqlite import Store
from assay.tasks.bfcl.data import installed_package_dir
from assay.tasks.bfcl.export import export_results

_SCRIPT = r"""
import json, sys
name, fc, utd, cats = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4].split(",")
from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING, ModelConfig
from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler
MODEL_CONFIG_MAPPING[name] = ModelConfig(
    model_name=name, display_name=name, url="", org="assay", license="",
    model_handler=OpenAICompletionsHandler, input_price=None, output_price=None,
    is_fc_model=fc, underscore_to_dot=utd)
from bfcl_eval.eval_checker import eval_runner
eval_runner.main([name], cats, None, None, partial_eval=True)
"""


@dataclass
class OfficialResult:
    """Per-category accuracy from the official tool, with ours for comparison."""

    available: bool
    message: str = ""
    official: dict[str, dict[str, Any]] = field(default_factory=dict)
    ours: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary(self) -> str:
        """One line per category: official vs assay, and whether they agree."""
        if not self.available:
            return f"official bfcl evaluate: {self.message}"
        lines = ["official bfcl evaluate (partial-eval) vs assay:"]
        for cat, off in sorted(self.official.items()):
            mine = self.ours.get(cat, {})
            same = (off.get("correct_count") == mine.get("successes")
                    and off.get("total_count") == mine.get("n"))
            lines.append(
                f"  {cat:24s} official {off.get('correct_count')}/{off.get('total_count')}"
                f"  assay {mine.get('successes')}/{mine.get('n')}  {'agree' if same else 'DIFFER'}"
            )
        return "\n".join(lines)


def official_importable() -> tuple[bool, str]:
    """Whether the full ``bfcl_eval`` checker imports here (checked in a subprocess)."""
    if installed_package_dir() is None:
        return False, "bfcl-eval is not installed (pip install bfcl-eval soundfile)"
    env = dict(os.environ, BFCL_PROJECT_ROOT=tempfile.mkdtemp(prefix="bfcl-probe-"))
    proc = subprocess.run(
        [sys.executable, "-c", "import bfcl_eval.eval_checker.eval_runner"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
        return False, (f"bfcl-eval is installed but its checker does not import ({last}); "
                       "install its dependencies: pip install bfcl-eval soundfile")
    return True, ""


def run_official(run_id: str, store: Any = None) -> OfficialResult:
    """Export the run's result files and score them with the official tool."""
    ok, why = official_importable()
    if not ok:
        return OfficialResult(False, why)
    own = store is None
    store = store or Store()
    try:
        run = store.get_run(run_id)
        results = store.results(run["id"])
    finally:
        if own:
            store.close()
    opts = run["spec"].get("task_options") or {}
    info = run["dataset"]
    fc = info.get("mode", opts.get("mode", "fc")) == "fc"
    name = "assay-fc" if fc else "assay-prompt"
    root = Path(tempfile.mkdtemp(prefix="bfcl-official-"))
    files = export_results(results, root / "result", name)
    cats = sorted({p.name[len("BFCL_v4_"):-len("_result.json")] for p in files})
    env = dict(os.environ, BFCL_PROJECT_ROOT=str(root),
               OPENAI_API_KEY=os.environ.get("OPENAI_API_KEY") or "sk-dummy")
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, name, "1" if fc else "0",
         "1" if info.get("underscore_to_dot", fc) else "0", ",".join(cats)],
        capture_output=True, text=True, env=env, timeout=1800,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
        return OfficialResult(False, f"bfcl evaluate failed: {last}")
    official: dict[str, dict[str, Any]] = {}
    for score_file in (root / "score" / name).rglob("BFCL_v4_*_score.json"):
        cat = score_file.name[len("BFCL_v4_"):-len("_score.json")]
        with open(score_file, encoding="utf-8") as f:
            official[cat] = json.loads(f.readline())
    own = store is None
    store = store or Store()
    try:
        ours = run_metrics(store, run["id"])["categories"]
    finally:
        if own:
            store.close()
    return OfficialResult(True, "", official, ours)
