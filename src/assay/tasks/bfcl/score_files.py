"""Score result files in the official format (``BFCL_v4_<category>_result.json``, one
``{"id", "result"}`` per line) without running a model, with the official decoding and
checker; the denominator is the entries present (as ``--partial-eval``). A broken line,
an unknown id or one of another category is an error naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core.types import Sample
from assay.data.files import parse_json, read_text
from assay.errors import DatasetError
from assay.metrics.format import fmt_rate
from assay.metrics.stats import proportion
from assay.tasks.bfcl.agentic.answer import check_agentic
from assay.tasks.bfcl.agentic.data import load_agentic
from assay.tasks.bfcl.categories import (
    MEMORY,
    OFFICIAL_SIZES,
    SUPPORTED,
    is_agentic,
    is_multi_turn,
    language_of,
)
from assay.tasks.bfcl.data import CategoryData, load_category, locate
from assay.tasks.bfcl.multiturn.data import load_multi_turn
from assay.tasks.bfcl.multiturn.scoring import score_multi_turn
from assay.tasks.bfcl.scoring import score_entry

_NAME = re.compile(r"^BFCL_v4_(?P<cat>.+)_result\.json$")
#: memory prerequisite results (``BFCL_v4_memory_<backend>_prereq_result.json``): written
#: beside the memory results, never scored (``eval_runner.py:795-801`` skips them)
_PREREQ = tuple(f"BFCL_v4_{c}_prereq_result.json" for c in MEMORY)


@dataclass
class ScoreReport:
    """Verdicts of every line scored, with per-category counts."""

    verdicts: list[dict[str, Any]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def per_category(self) -> dict[str, tuple[int, int]]:
        """``{category: (correct, total)}``."""
        out: dict[str, list[int]] = {}
        for v in self.verdicts:
            c = out.setdefault(v["category"], [0, 0])
            c[0] += bool(v["valid"])
            c[1] += 1
        return {k: (v[0], v[1]) for k, v in sorted(out.items())}

    def summary(self) -> str:
        """Human-readable table: accuracy per category and overall with 95% intervals."""
        lines = []
        total_ok = total = 0
        for cat, (ok, n) in self.per_category().items():
            size = OFFICIAL_SIZES.get(cat)
            part = f" of {size}" if size and n != size else ""
            lines.append(f"{cat:24s} {fmt_rate(proportion(ok, n))}{part}")
            total_ok += ok
            total += n
        lines.append(f"{'overall (entries)':24s} {fmt_rate(proportion(total_ok, total))}")
        return "\n".join(lines)


def result_files(path: Path) -> list[Path]:
    """The result files at ``path`` (a file, or every ``BFCL_v4_*_result.json`` below a folder)."""
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.rglob("BFCL_v4_*_result.json") if p.name not in _PREREQ)
        if not files:
            raise DatasetError(f"no BFCL_v4_<category>_result.json files under {path}")
        return files
    raise DatasetError(f"result path not found: {path}")


def category_of(path: Path) -> str:
    """Category named by a result file; unsupported categories are errors."""
    m = _NAME.match(path.name)
    if not m:
        raise DatasetError(f"{path}: result files must be named BFCL_v4_<category>_result.json")
    cat = m.group("cat")
    if path.name in _PREREQ:
        raise DatasetError(f"{path}: memory prerequisite results are not scored (as "
                           "officially); give the memory result file or the folder")
    if cat not in SUPPORTED:
        raise DatasetError(f"{path}: category {cat!r} is not a supported BFCL category "
                           f"({', '.join(SUPPORTED)})")
    return cat


def score_results(path: str | Path, *, data_dir: str | Path | None = None,
                  underscore_to_dot: bool | None = None) -> ScoreReport:
    source = locate(data_dir)
    report = ScoreReport()
    cache: dict[str, CategoryData] = {}
    for f in result_files(Path(path)):
        cat = category_of(f)
        if cat not in cache:
            if is_multi_turn(cat):
                cache[cat] = load_multi_turn(source, cat)
            elif is_agentic(cat):
                agentic = load_agentic(source, cat)
                cache[cat] = CategoryData(cat, agentic.entries, agentic.ground_truth,
                                          agentic.files)
            else:
                cache[cat] = load_category(source, cat)
        data = cache[cat]
        by_id = {e["id"]: e for e in data.entries}
        lang = language_of(cat)
        seen: set[str] = set()
        report.files.append(str(f))
        for lineno, line in enumerate(read_text(f).split("\n"), 1):
            if not line.strip():
                continue
            where = f"{f}:{lineno}"
            row = parse_json(line, where)
            if not isinstance(row, dict) or "id" not in row or "result" not in row:
                raise DatasetError(f"{where}: each line needs an object with 'id' and 'result'")
            eid = row["id"]
            if not isinstance(eid, str):
                raise DatasetError(f"{where}: 'id' must be a string, got {type(eid).__name__}")
            if eid not in by_id:
                other = next((c for c in SUPPORTED if c != cat and isinstance(eid, str)
                              and _id_category(eid) == c), None)
                hint = f" (it belongs to {other}; wrong file?)" if other else ""
                raise DatasetError(f"{where}: unknown id {eid!r} for category {cat}{hint}")
            if eid in seen:
                raise DatasetError(f"{where}: duplicate id {eid!r}")
            seen.add(eid)
            raw = row["result"]
            if is_multi_turn(cat):
                report.verdicts.append(_multi_turn_verdict(by_id[eid], data, cat, raw))
                continue
            if is_agentic(cat):
                report.verdicts.append(_agentic_verdict(eid, data, cat, raw))
                continue
            mode = "prompt" if isinstance(raw, str) else "fc"
            utd = (mode == "fc") if underscore_to_dot is None else underscore_to_dot
            official = score_entry(
                raw=raw, text=raw if isinstance(raw, str) else "",
                functions=by_id[eid]["function"], ground_truth=data.ground_truth.get(eid),
                category=cat, language=lang, mode=mode, underscore_to_dot=utd,
                tolerant=False,
            )[0]
            report.verdicts.append({
                "id": eid, "category": cat, "valid": official.value == 1.0,
                "error_type": official.metadata["error_type"],
            })
    return report


def multi_turn_mode(raw: Any) -> str:
    """FC when any step of a multi-turn or agentic result holds calls as a list or dict,
    else prompt mode."""
    if isinstance(raw, list):
        for turn in raw:
            for step in turn if isinstance(turn, list) else []:
                if isinstance(step, (list, dict)):
                    return "fc"
    return "prompt"


def _multi_turn_verdict(entry: dict[str, Any], data: CategoryData, cat: str,
                        raw: Any) -> dict[str, Any]:
    """One multi-turn result line scored by the multi-turn checker (the official rules)."""
    sample = Sample(id=entry["id"], input="", target=data.ground_truth[entry["id"]],
                    metadata={"category": cat, "involved_classes": entry["involved_classes"],
                              "initial_config": entry["initial_config"]})
    score = score_multi_turn(sample, raw, multi_turn_mode(raw))[0]
    return {"id": entry["id"], "category": cat, "valid": score.value == 1.0,
            "error_type": score.metadata["error_type"],
            "first_failing_turn": score.metadata["first_failing_turn"]}


def _agentic_verdict(eid: str, data: CategoryData, cat: str, raw: Any) -> dict[str, Any]:
    """One memory or web-search result line scored as the official agentic runner does."""
    verdict = check_agentic(raw, data.ground_truth[eid], multi_turn_mode(raw))
    return {"id": eid, "category": cat, "valid": bool(verdict["valid"]),
            "error_type": verdict.get("error_type")}


def _id_category(entry_id: str) -> str:
    """Category encoded in an official id (``live_simple_19-3-15`` -> ``live_simple``)."""
    head = entry_id.split("-", 1)[0]
    return head.rsplit("_", 1)[0]
