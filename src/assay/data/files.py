"""Reading tabular datasets (JSONL, JSON, CSV, Hugging Face): each row with its ``file:line``,
each source with an identity and content hash for the run's record."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.data.cache import sha256_files
from assay.data.hf import load_split
from assay.errors import DatasetError

#: a data source that is a Hugging Face dataset id, never a local file of that name
HF_SCHEME = "hf://"


@dataclass
class Rows:
    rows: list[dict[str, Any]]
    locations: list[str]
    info: dict[str, Any] = field(default_factory=dict)


def sha256_file(path: Path) -> str:
    return sha256_files([path])


def read_text(path: Path) -> str:
    """A file's text as strict UTF-8 (a BOM is dropped); bad bytes are a file:line error."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DatasetError(f"{path}: cannot read ({e.strerror or e})") from e
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise DatasetError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {col}); "
            "save the file as UTF-8") from None


def parse_json(text: str, where: str) -> Any:
    """``json.loads`` whose every failure (syntax, huge integers, deep nesting, and lone
    UTF-16 surrogates, which parse but could not be stored) is one DatasetError line."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetError(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise DatasetError(f"{where}: JSON nested too deeply to read") from None
    except ValueError as e:  # e.g. "Exceeds the limit (4300 digits) for integer string ..."
        raise DatasetError(f"{where}: invalid JSON ({' '.join(str(e).split())[:120]})") from None
    if "\\u" in text and _has_lone_surrogate(value):
        raise DatasetError(
            f"{where}: a string holds a lone UTF-16 surrogate escape (such as \\ud800), "
            "which is not valid text; fix or remove it")
    return value


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def read_jsonl(path: Path) -> Rows:
    """Read a JSONL file; blank lines are skipped."""
    rows: list[dict[str, Any]] = []
    locs: list[str] = []
    name = str(path)
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip():
            continue
        row = parse_json(line, f"{path}:{lineno}")
        if not isinstance(row, dict):
            raise DatasetError(
                f"{path}:{lineno}: each line must be a JSON object, got {type(row).__name__}")
        rows.append(row)
        locs.append(f"{name}:{lineno}")
    return Rows(rows, locs)


def read_json(path: Path) -> Rows:
    """Read a JSON file holding a list of objects (or ``{"data": [...]}``)."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise DatasetError(f"{path}:{e.lineno}: invalid JSON ({e.msg})") from e
    except (ValueError, RecursionError):
        data = parse_json(text, _first_long_number(text, path))  # raises with the location
    if "\\u" in text and _has_lone_surrogate(data):
        parse_json(text, str(path))  # raises the surrogate error
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


def _first_long_number(text: str, path: Path) -> str:
    """``file:line`` of the first run of 4,000+ digits (Python refuses such ints)."""
    m = re.search(r"\d{4000,}", text)
    return f"{path}:{text.count(chr(10), 0, m.start()) + 1}" if m else str(path)


def read_csv(path: Path) -> Rows:
    """Read a CSV (or TSV) file with a header row; only the delimiter is sniffed (sniffed
    quote characters mangle apostrophes)."""
    f = io.StringIO(read_text(path), newline="")
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    if delimiter == ",":
        with contextlib.suppress(csv.Error):
            delimiter = csv.Sniffer().sniff(f.read(4096), delimiters=",;\t").delimiter
        f.seek(0)
    reader = csv.DictReader(f, delimiter=delimiter)
    try:
        fieldnames = reader.fieldnames
    except csv.Error as e:
        raise DatasetError(f"{path}:1: malformed CSV header ({e})") from e
    if not fieldnames:
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
    """One split (default ``test``) of a Hugging Face dataset; unreachable or offline, one
    line saying to use a local file."""
    split = split or "test"
    rows, split, fingerprint = load_split(
        dataset_id, split=split, config=config,
        hint=f" (split {split!r}{', config ' + repr(config) if config else ''}); download it "
        "first or point --data at a local JSONL/CSV file")
    info = {"source": "huggingface", "id": dataset_id, "split": split, "config": config,
            "content_hash": fingerprint}
    return Rows(rows, [f"{dataset_id}[{split}][{i}]" for i in range(len(rows))], info)


def load_rows(source: str, *, split: str | None = None, config: str | None = None) -> Rows:
    """Load rows from a local file (``.jsonl``, ``.json``, ``.csv``, ``.tsv``) or an HF id
    (``hf://org/name``: only the Hub, never a local file of that name)."""
    if source.startswith(HF_SCHEME):
        return read_hf(source[len(HF_SCHEME):], split=split, config=config)
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
