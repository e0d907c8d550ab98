"""The review page's input files: judge scores, and one-line errors for bad files."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.errors import DatasetError

__all__ = ["load_judge_scores", "utf8_error"]


def load_judge_scores(source: str | Path | Mapping[str, Any] | Sequence[Any] | None
                      ) -> dict[str, dict[str, float]]:
    """Judge scores as ``problem_id -> {dimension: score}``, from that mapping (or a
    JSON file of it), a list of ``{"problem_id", "scores"}`` rows, or such a list under
    ``results``/``items``/``details``. Non-numeric values are dropped."""
    if source is None:
        return {}
    data: Any = source
    if isinstance(source, str | Path):
        data = _read_json_file(Path(source), "judge scores")
    if isinstance(data, Mapping):
        for key in ("results", "items", "details"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    rows: list[tuple[str, Any]]
    if isinstance(data, Mapping):
        rows = [(str(k), v) for k, v in data.items()]
    elif isinstance(data, Sequence) and not isinstance(data, str):
        rows = [(str(r.get("problem_id")), r.get("scores", r)) for r in data
                if isinstance(r, Mapping) and r.get("problem_id") is not None]
    else:
        raise DatasetError("judge scores must map problem ids to {dimension: score}")
    out: dict[str, dict[str, float]] = {}
    for pid, scores in rows:
        if not isinstance(scores, Mapping):
            continue
        clean = {str(k): v for k, v in scores.items()
                 if isinstance(v, int | float) and not isinstance(v, bool)}
        if clean:
            out[pid] = clean
    return out


def _read_json_file(path: Path, what: str) -> Any:
    """One JSON document from ``path``; every way it can be bad is a one-line DatasetError."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DatasetError(f"{path}: cannot read {what} ({e.strerror or type(e).__name__})"
                           ) from e
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise utf8_error(path, e) from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}:{e.lineno}: {what} are not valid JSON ({e.msg} at column "
                           f"{e.colno})") from e
    except RecursionError as e:
        raise DatasetError(f"{path}: {what} are nested too deeply to read") from e
    except ValueError as e:  # e.g. an integer longer than Python's digit limit
        raise DatasetError(f"{path}: cannot read {what} ({str(e).splitlines()[0]})") from e


def utf8_error(path: Path, error: UnicodeDecodeError) -> DatasetError:
    """A one-line error naming ``file:line`` of the first line that is not valid UTF-8."""
    try:
        data = path.read_bytes()
    except OSError:
        return DatasetError(f"{path}: not valid UTF-8 ({error.reason}); save it as UTF-8")
    for lineno, line in enumerate(data.split(b"\n"), 1):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as e:
            return DatasetError(f"{path}:{lineno}: not valid UTF-8 (byte "
                                f"0x{line[e.start]:02x} at column {e.start + 1}); save the "
                                "file as UTF-8")
    return DatasetError(f"{path}: not valid UTF-8 ({error.reason}); save it as UTF-8")
