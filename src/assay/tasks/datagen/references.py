"""Reference problems: real competition problems used as style examples and comparisons.

When a Hugging Face set cannot be loaded and fallback is allowed, MATH-500 stands in.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from assay.data import math500
from assay.data.files import read_jsonl, sha256_file
from assay.data.hf import load_split
from assay.errors import DatasetError
from assay.tasks.datagen.problem import Problem, load_problems, problems_from_rows

#: the book's generator reference set (900+ AIME problems, 1983-2025)
AIME_STYLE_SET = "TianHongZXY/aime-1983-2025"
#: the book's comparison set (the 30 AIME 2025 problems)
AIME_2025_SET = "math-ai/aime25"
DEFAULT_REFERENCE = AIME_STYLE_SET
MATH500 = "math500"


def problems_hash(problems: list[Problem]) -> str:
    """SHA-256 over the problems' ids, statements and answers, in order."""
    h = hashlib.sha256()
    for p in problems:
        h.update(json.dumps([p.problem_id, p.problem, p.answer], ensure_ascii=False).encode())
    return h.hexdigest()


def load_hf_reference(dataset_id: str, *, split: str | None = None,
                      problem_key: str | None = None, answer_key: str | None = None,
                      solution_key: str | None = None) -> tuple[list[Problem], dict[str, Any]]:
    """Problems from a Hugging Face dataset (columns inferred unless keys are given); a
    one-line :class:`DatasetError` when unreachable."""
    rows, used_split, fingerprint = load_split(dataset_id, split=split)
    if not rows:
        raise DatasetError(f"{dataset_id} (split {used_split}) is empty")
    locations = [f"{dataset_id}[{used_split}][{i}]" for i in range(len(rows))]
    problems = problems_from_rows(rows, locations, source=f"reference:{dataset_id}",
                                  problem_key=problem_key, answer_key=answer_key,
                                  solution_key=solution_key)
    info = {"source": dataset_id, "kind": "huggingface", "split": used_split,
            "fingerprint": fingerprint}
    return problems, info


def load_reference(source: str | None, *, problem_key: str | None = None,
                   answer_key: str | None = None, solution_key: str | None = None,
                   allow_fallback: bool = True) -> tuple[list[Problem], dict[str, Any]]:
    """Reference problems and where they came from (``source``, ``requested``, ``kind``,
    ``count``, ``content_hash``; ``fallback_reason`` when MATH-500 stood in)."""
    requested = source or DEFAULT_REFERENCE
    keys = {"problem_key": problem_key, "answer_key": answer_key, "solution_key": solution_key}
    if requested.strip().lower() in (MATH500, "math-500"):
        problems, info = _math500()
    elif Path(requested).expanduser().exists() or _looks_local(requested):
        path = Path(requested).expanduser()
        if not path.is_file():
            raise DatasetError(f"reference file not found: {requested}")
        problems = load_problems(path, **keys)
        info = {"source": str(path), "kind": "file", "file_sha256": sha256_file(path)}
    else:
        try:
            problems, info = load_hf_reference(requested, **keys)
        except DatasetError as e:
            if not allow_fallback:
                raise
            reason = str(e)
            try:
                problems, info = _math500()
            except DatasetError as e2:
                raise DatasetError(
                    f"no reference set: {reason}, and the MATH-500 fallback is not available "
                    "(run 'assay data pull math500', or pass --reference FILE)") from e2
            info["fallback_reason"] = reason
    if not problems:
        raise DatasetError(f"reference set {requested} has no problems")
    info.update(requested=requested, count=len(problems), content_hash=problems_hash(problems))
    return problems, info


def _looks_local(source: str) -> bool:
    return source.startswith((".", "/", "~")) or Path(source).suffix.lower() in (
        ".jsonl", ".json", ".csv", ".tsv", ".ndjson") or source.count("/") > 1


def _math500() -> tuple[list[Problem], dict[str, Any]]:
    problems = load_math500(integer_first=True)
    meta = math500.read_meta()
    info = {"source": MATH500, "kind": "math500", "version": meta.get("version"),
            "file_sha256": meta.get("content_hash"),
            "integer_answers": sum(1 for p in problems
                                   if (v := math500.integer_form(p.answer)) is not None
                                   and 0 <= v <= 999)}
    return problems, info


def load_math500(integer_first: bool = True) -> list[Any]:
    """The cached MATH-500 problems (``integer_first``: AIME-like answers 0-999 first)."""
    path = math500.locate()
    meta = math500.read_meta(path)
    try:
        rows = read_jsonl(path).rows
    except DatasetError as e:
        raise DatasetError(f"{e}; run 'assay data pull math500 --force'") from e
    problems = [
        Problem(
            problem_id=row["problem_id"], problem=row["problem"], answer=str(row["answer"]),
            solution=row.get("solution") or "", topic=row.get("subject"),
            difficulty=row.get("level"), source=math500.SOURCE,
            provenance={"dataset": "MATH-500",
                        "package": f"{math500.PACKAGE}=={meta.get('version')}",
                        "level": row.get("level"), "subject": row.get("subject")},
        )
        for row in rows
    ]
    if integer_first:
        def aime_like(p: Any) -> bool:
            value = math500.integer_form(p.answer)
            return value is not None and 0 <= value <= 999
        problems.sort(key=lambda p: (not aime_like(p), p.problem_id))
    return problems
