"""Problems, generated or reference: what the generator writes, the judges read and reviewers
review; read from JSON, JSONL or CSV with ``qa``'s key inference."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_open, atomic_write_text
from assay.data.files import load_rows
from assay.errors import DatasetError

PROBLEM_KEYS = ("problem", "question", "Problem", "Question", "prompt")
ANSWER_KEYS = ("answer", "Answer", "final_answer", "expected_answer", "target")
SOLUTION_KEYS = ("solution", "Solution", "reasoning", "rationale", "explanation")
ID_KEYS = ("problem_id", "id", "ID", "task_id", "idx", "unique_id")


@dataclass
class Problem:
    """A math problem with its stated answer, solution and where it came from."""

    problem_id: str
    problem: str
    answer: str
    solution: str = ""
    topic: str | None = None
    difficulty: int | None = None
    source: str = "generated"  # "generated" or "reference:<set name>"
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the book's field names)."""
        return asdict(self)


def _pick(row: dict[str, Any], given: str | None, keys: tuple[str, ...]) -> str | None:
    if given:
        return given if given in row else None
    return next((k for k in keys if k in row), None)


def problems_from_rows(rows: list[dict[str, Any]], locations: list[str], *, source: str,
                       problem_key: str | None = None, answer_key: str | None = None,
                       solution_key: str | None = None, id_key: str | None = None
                       ) -> list[Problem]:
    out: list[Problem] = []
    seen: set[str] = set()
    for n, (row, where) in enumerate(zip(rows, locations, strict=True)):
        pk = _pick(row, problem_key, PROBLEM_KEYS)
        ak = _pick(row, answer_key, ANSWER_KEYS)
        if pk is None or not str(row.get(pk) or "").strip():
            raise DatasetError(f"{where}: no problem text (fields: {', '.join(row)}); "
                               "pass --problem-key")
        if ak is None or row.get(ak) is None:
            raise DatasetError(f"{where}: no answer (fields: {', '.join(row)}); pass --answer-key")
        sk = _pick(row, solution_key, SOLUTION_KEYS)
        ik = _pick(row, id_key, ID_KEYS)
        pid = str(row[ik]) if ik and row.get(ik) not in (None, "") else f"{source}-{n}"
        if pid in seen:
            raise DatasetError(f"{where}: duplicate id {pid!r}")
        seen.add(pid)
        known = {pk, ak, sk, ik, "topic", "difficulty", "source", "provenance"}
        prov = row.get("provenance") if isinstance(row.get("provenance"), dict) else {}
        extra = {k: v for k, v in row.items() if k not in known}
        diff = row.get("difficulty")
        out.append(Problem(
            problem_id=pid, problem=str(row[pk]), answer=str(row[ak]),
            solution=str(row.get(sk) or "") if sk else "",
            topic=row.get("topic"), difficulty=int(diff) if isinstance(diff, int | float) else None,
            source=str(row.get("source") or source), provenance={**extra, **prov},
        ))
    return out


def load_problems(path: str | Path, *, source: str | None = None, **keys: str | None
                  ) -> list[Problem]:
    rows = load_rows(str(path))
    name = source or (f"reference:{Path(str(path)).stem}" if Path(str(path)).exists() else str(path))
    if rows.rows and all("problem_id" in r and "source" in r for r in rows.rows):
        name = rows.rows[0]["source"]  # our own files keep their recorded source
    return problems_from_rows(rows.rows, rows.locations, source=name, **keys)


def save_problems(problems: list[Problem], path: str | Path) -> Path:
    """Write problems as JSONL (``.jsonl``) or as the book's JSON (anything else)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".jsonl":
        with atomic_open(out) as f:
            for p in problems:
                f.write(json.dumps(p.to_dict(), ensure_ascii=False) + "\n")
    else:
        atomic_write_text(out, json.dumps([p.to_dict() for p in problems], ensure_ascii=False,
                                          indent=2), encoding="utf-8")
    return out
