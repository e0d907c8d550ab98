"""``assay gaia score``: a predictions file (``task_id``, ``model_answer``) scored against
gold answers (JSONL with ``task_id``, ``Final answer`` and optionally ``Level``, as GAIA's
``metadata.jsonl``), without a model; every problem is an error naming file and line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.data.files import read_jsonl
from assay.errors import DatasetError
from assay.metrics.format import counted, fmt_rate
from assay.metrics.stats import proportion
from assay.tasks.gaia.scoring import get_scorer

_ANSWER_KEYS = ("Final answer", "final_answer", "answer")


def _read(path: Path) -> list[tuple[str, dict[str, Any]]]:
    if not path.is_file():
        raise DatasetError(f"file not found: {path}")
    rows = read_jsonl(path)
    for where, row in zip(rows.locations, rows.rows, strict=True):
        if "task_id" not in row:
            raise DatasetError(f"{where}: each line needs an object with 'task_id'")
    return list(zip(rows.locations, rows.rows, strict=True))


@dataclass
class GAIAScoreReport:
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    scorer: str = "official"

    def summary(self) -> str:
        lines = [f"scorer: {self.scorer}"]
        ok = sum(v["correct"] for v in self.verdicts)
        lines.append(f"exact match  {fmt_rate(proportion(ok, len(self.verdicts)))}")
        for lvl in (1, 2, 3):
            vs = [v for v in self.verdicts if v.get("level") == lvl]
            if vs:
                lines.append(f"level {lvl}      "
                             f"{fmt_rate(proportion(sum(v['correct'] for v in vs), len(vs)))}")
        if self.missing:
            lines.append(f"{counted(len(self.missing), 'answer')} without a prediction "
                         "(not counted): "
                         f"{', '.join(self.missing[:3])}{'...' if len(self.missing) > 3 else ''}")
        return "\n".join(lines)


def score_predictions(answers: str | Path, predictions: str | Path,
                      scorer: str = "official") -> GAIAScoreReport:
    match = get_scorer(scorer)
    a_path, p_path = Path(answers), Path(predictions)
    gold: dict[str, dict[str, Any]] = {}
    for where, row in _read(a_path):
        key = next((k for k in _ANSWER_KEYS if k in row), None)
        if key is None:
            raise DatasetError(f"{where}: no answer field (one of {', '.join(_ANSWER_KEYS)})")
        level = row.get("Level", row.get("level"))
        try:
            level = int(level) if level not in (None, "") else None
        except (TypeError, ValueError):
            raise DatasetError(f"{where}: Level must be 1, 2 or 3, got {level!r}") from None
        gold[str(row["task_id"])] = {"answer": str(row[key]), "level": level}
    report = GAIAScoreReport(scorer=scorer)
    seen: set[str] = set()
    for where, row in _read(p_path):
        tid = str(row["task_id"])
        if tid not in gold:
            raise DatasetError(f"{where}: task_id {tid!r} is not in {a_path.name}")
        if tid in seen:
            raise DatasetError(f"{where}: duplicate task_id {tid!r}")
        seen.add(tid)
        if "model_answer" not in row:
            raise DatasetError(f"{where}: missing 'model_answer'")
        answer = row["model_answer"]
        if answer is not None and not isinstance(answer, str):
            raise DatasetError(f"{where}: model_answer must be a string (the leaderboard's "
                               f"scorer rejects {type(answer).__name__}); write it as \"{answer}\"")
        if gold[tid]["answer"] == "?":
            raise DatasetError(f"{where}: the gold answer of {tid} is hidden ('?'); test-split "
                               "answers cannot be scored locally")
        report.verdicts.append({"task_id": tid, "correct": bool(match(answer, gold[tid]["answer"])),
                                "level": gold[tid]["level"]})
    report.missing = [t for t in gold if t not in seen]
    return report
