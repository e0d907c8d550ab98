"""Turn rows of any question/answer dataset into samples: field names given (``--question-key``
...) or inferred from common names; a row missing a field is an error naming its file and line.
"""

from __future__ import annotations

import json
from typing import Any

from assay.core.types import Sample
from assay.data.files import Rows
from assay.errors import DatasetError

QUESTION_KEYS = ("question", "input", "prompt", "query", "problem", "instruction", "text", "Question")
ANSWER_KEYS = ("answer", "target", "expected", "expected_answer", "ground_truth", "final_answer",
               "output", "label", "gold", "reference", "solution", "Answer", "Final answer")
CHOICES_KEYS = ("choices", "options", "candidates")
ID_KEYS = ("id", "task_id", "question_id", "qid", "uid", "idx")


def infer_key(fields: list[str], candidates: tuple[str, ...]) -> str | None:
    """The first candidate present in ``fields`` (exact, then case-insensitive)."""
    for c in candidates:
        if c in fields:
            return c
    lower = {f.lower(): f for f in fields}
    for c in candidates:
        if c.lower() in lower:
            return lower[c.lower()]
    return None


def _choices(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)  # CSV cells often hold a JSON list
        except (ValueError, RecursionError):
            value = [c.strip() for c in value.split("|")] if "|" in value else None
    if isinstance(value, dict):  # {"label": [...], "text": [...]} as in ARC / CommonsenseQA
        value = value["text"] if "text" in value else list(value.values())
    if not isinstance(value, list) or len(value) < 2:
        raise DatasetError(f"{where}: choices must be a list of at least two options")
    return [str(c) for c in value]


def build_samples(rows: Rows, *, question_key: str | None = None, answer_key: str | None = None,
                  choices_key: str | None = None, id_key: str | None = None,
                  ) -> tuple[list[Sample], dict[str, str | None]]:
    """Samples plus the key mapping actually used (recorded with the run)."""
    if not rows.rows:
        raise DatasetError(f"{rows.info.get('path') or rows.info.get('id') or 'dataset'}: no rows")
    fields = list(rows.rows[0].keys())
    q = question_key or infer_key(fields, QUESTION_KEYS)
    a = answer_key or infer_key(fields, ANSWER_KEYS)
    c = choices_key or infer_key(fields, CHOICES_KEYS)
    i = id_key or infer_key(fields, ID_KEYS)
    if q is None:
        raise DatasetError(f"{rows.locations[0]}: cannot tell which field is the question "
                           f"(fields: {', '.join(fields)}); pass --question-key")
    if a is None:
        raise DatasetError(f"{rows.locations[0]}: cannot tell which field is the answer "
                           f"(fields: {', '.join(fields)}); pass --answer-key")
    samples: list[Sample] = []
    seen: set[str] = set()
    for n, (row, where) in enumerate(zip(rows.rows, rows.locations, strict=True)):
        for key, flag in ((q, "--question-key"), (a, "--answer-key")):
            if key not in row or row[key] is None:
                raise DatasetError(f"{where}: missing key {key!r} (set {flag} to the right field)")
        question = row[q]
        if not isinstance(question, str) or not question.strip():
            raise DatasetError(f"{where}: field {q!r} must be a non-empty string")
        # a row without an id gets "#<row number>", which cannot clash with a real id
        sid = str(row[i]) if i and row.get(i) not in (None, "") else (f"#{n}" if i else str(n))
        if sid in seen:
            raise DatasetError(f"{where}: duplicate id {sid!r} in field {i!r}")
        seen.add(sid)
        meta: dict[str, Any] = {"source": where}
        if c and c in row and row[c] not in (None, ""):
            meta["choices"] = _choices(row[c], where)
        elif choices_key:
            raise DatasetError(f"{where}: missing key {c!r} (set --choices-key to the right field)")
        samples.append(Sample(id=sid, input=question, target=row[a], metadata=meta))
    return samples, {"question": q, "answer": a, "choices": c, "id": i}
