"""Reading tabular datasets: JSONL, JSON, CSV files and Hugging Face datasets.

Every row comes back with its location (``file:line``) so a bad row gets an
error that says exactly where it is. Every source also yields an identity and
a content hash, which each run records.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import DatasetError


@dataclass
class Rows:
    """Rows of a dataset with where they came from."""

    rows: list[dict[str, Any]]
    locations: list[str]
    info: dict[str, Any] = field(default_factory=dict)


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_jsonl(path: Path) -> Rows:
    """Read a JSONL file; blank lines are skipped, a bad line is a one-line error."""
    rows: list[dict[str, Any]] = []
    locs: list[str] = []
    name = str(path)
    with open(path, encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DatasetError(f"{path}:{lineno}: invalid JSON ({e.msg} at column {e.colno})"
                                   ) from e
            if not isinstance(row, dict):
                raise DatasetError(
                    f"{path}:{lineno}: each line must be a JSON object, got {type(row).__name__}"
                )
            rows.append(row)
            locs.append(f"{name}:{lineno}")
    return Rows(rows, locs)


def read_json(path: Path) -> Rows:
    """Read a JSON file holding a list of objects (or ``{"data": [...]}``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from e
    if isinstance(data, dict):
        for key in ("data", "rows", "examples", "items", "problems"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of objects")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise DatasetError(f"{path}: item {i} is not an object")
    return Rows(data, [f"{path}[{i}]" for i in range(len(data))])


def read_csv(path: Path) -> Rows:
    """Read a CSV (or TSV) file with a header row.

    Only the delimiter is sniffed (``,``, ``;`` or tab); quoting is standard CSV
    (``"`` with doubling), since sniffed quote characters mangle apostrophes.
    """
    with open(path, encoding="utf-8-sig", newline="") as f:
        delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
        if delimiter == ",":
            try:
                delimiter = csv.Sniffer().sniff(f.read(4096), delimiters=",;\t").delimiter
            except csv.Error:
                pass
            f.seek(0)
        reader = csv.DictReader(f, delimiter=delimiter)
        if not reader.fieldnames:
            raise DatasetError(f"{path}: empty CSV file (a header row is required)")
        rows: list[dict[str, Any]] = []
        locs: list[str] = []
        while True:
            start = reader.line_num + 1  # a quoted cell may span lines: cite the first
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                raise DatasetError(f"{path}:{start}: malformed CSV ({e})") from e
            if None in row:
                raise DatasetError(f"{path}:{start}: row has more fields than the header")
            rows.append(dict(row))
            locs.append(f"{path}:{start}")
    return Rows(rows, locs)


def read_hf(dataset_id: str, *, split: str | None, config: str | None) -> Rows:
    """Load a Hugging Face dataset (token from ``HF_TOKEN``); offline gives a clear error."""
    try:
        import datasets
    except ImportError as e:
        raise DatasetError(
            f"{dataset_id!r} is not a local file, and loading Hugging Face datasets needs the "
            "'datasets' package: pip install 'assay[hf]'"
        ) from e
    split = split or "test"
    try:
        ds = datasets.load_dataset(dataset_id, config, split=split,
                                   token=os.environ.get("HF_TOKEN") or None)
    except Exception as e:  # datasets raises many types; all mean "could not load"
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DatasetError(
            f"could not load Hugging Face dataset {dataset_id!r} (split {split!r}"
            f"{', config ' + repr(config) if config else ''}): {msg}. Offline? Download it "
            "first or point --data at a local JSONL/CSV file"
        ) from e
    rows = [dict(r) for r in ds]
    info = {
        "source": "huggingface", "id": dataset_id, "split": split, "config": config,
        "content_hash": getattr(ds, "_fingerprint", None),
    }
    return Rows(rows, [f"{dataset_id}[{split}][{i}]" for i in range(len(rows))], info)


def load_rows(source: str, *, split: str | None = None, config: str | None = None) -> Rows:
    """Load rows from a local file (``.jsonl``, ``.json``, ``.csv``, ``.tsv``) or an HF id."""
    path = Path(source).expanduser()
    if path.is_dir():
        raise DatasetError(f"{path} is a folder; give a .jsonl, .json or .csv file")
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix in (".jsonl", ".ndjson"):
            rows = read_jsonl(path)
        elif suffix == ".json":
            rows = read_json(path)
        elif suffix in (".csv", ".tsv"):
            rows = read_csv(path)
        else:
            raise DatasetError(f"{path}: unsupported file type {suffix!r}; use .jsonl, .json or .csv")
        rows.info = {"source": "file", "path": str(path.resolve()), "format": suffix.lstrip("."),
                     "content_hash": sha256_file(path)}
        return rows
    looks_local = source.startswith((".", "/", "~")) or Path(source).suffix.lower() in (
        ".jsonl", ".json", ".csv", ".tsv", ".ndjson")
    if looks_local or source.count("/") > 1 or not source:
        raise DatasetError(f"dataset file not found: {source}")
    return read_hf(source, split=split, config=config)
