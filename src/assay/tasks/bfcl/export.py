"""Official result files from a run: ``result/<model>/<group>/BFCL_v4_<category>_result.json``,
one ``{"id", "result"}`` line per entry in official id order, ``result`` the raw output as
the official tools expect it; samples that ended in an error are left out (score such
files with ``--partial-eval``).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_open
from assay.core.types import SampleResult
from assay.tasks.bfcl.categories import result_group
from assay.tasks.bfcl.prompts import official_sort_key


def model_dir_name(model_id: str) -> str:
    """A folder name for a model id, as the official layout uses (``/`` -> ``_``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model_id.replace("/", "_")).strip("_") or "model"


def raw_output(r: SampleResult) -> Any:
    """The stored raw output of a scored sample (``None`` for errors)."""
    s = (r.scores or {}).get("bfcl")
    return (s.get("metadata") or {}).get("raw") if s else None


def export_results(results: list[SampleResult], result_dir: Path, model_name: str) -> list[Path]:
    by_cat: dict[str, list[SampleResult]] = defaultdict(list)
    for r in results:
        if r.error is None and r.epoch == 0 and raw_output(r) is not None:
            by_cat[(r.metadata or {}).get("category", "unknown")].append(r)
    paths = []
    model_dir = result_dir / model_dir_name(model_name)
    for cat, rs in sorted(by_cat.items()):
        path = model_dir / result_group(cat) / f"BFCL_v4_{cat}_result.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        rs.sort(key=lambda r: official_sort_key(r.sample_id))
        with atomic_open(path) as f:
            for r in rs:
                f.write(json.dumps({"id": r.sample_id, "result": raw_output(r)},
                                   ensure_ascii=False) + "\n")
        paths.append(path)
        prereqs = memory_prereqs(rs)
        if prereqs:  # the official harness writes them beside the memory results
            pre = path.with_name(f"BFCL_v4_{cat}_prereq_result.json")
            with atomic_open(pre) as f:
                for eid in sorted(prereqs, key=official_sort_key):
                    f.write(json.dumps({"id": eid, "result": prereqs[eid]},
                                       ensure_ascii=False) + "\n")
            paths.append(pre)
    return paths


def memory_prereqs(results: list[SampleResult]) -> dict[str, Any]:
    """The memory prerequisite conversations a run held (each kept by the question whose
    solve ran its scenario's chain): prerequisite id -> its raw replies per turn."""
    out: dict[str, Any] = {}
    for r in results:
        memory = ((r.outcome or {}).get("metadata") or {}).get("memory") or {}
        for p in memory.get("prereqs") or []:
            if isinstance(p, dict) and "id" in p:
                out.setdefault(p["id"], p.get("result"))
    return out
