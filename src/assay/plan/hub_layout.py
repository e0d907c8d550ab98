"""The network-free part of :mod:`assay.plan.hub`: a Hub dataset's configs, split files and
columns, and a downloaded file's rows (an unreadable file is one :class:`DatasetError` line)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import DatasetError

#: a data file's name ends with one of these (``.gz`` allowed after the text formats)
DATA_SUFFIXES = (".parquet", ".jsonl", ".json", ".csv")
#: split names by preference, and the words that name them in file paths
SPLIT_WORDS = {"test": ("test", "testing"),
               "validation": ("validation", "valid", "val", "dev"),
               "train": ("train", "training")}
SPLIT_ORDER = ("test", "validation", "valid", "dev", "val", "train")


@dataclass
class _Config:
    name: str | None  # None: no configs in the card, one default config from the files
    splits: dict[str, list[str]]
    default: bool = False


def _is_data_file(path: str) -> bool:
    p = path.lower().removesuffix(".gz")
    return p.endswith(DATA_SUFFIXES) and not path.rsplit("/", 1)[-1].startswith(".")


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A data_files pattern (fsspec glob: ``*`` within a folder, ``**`` across)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + "$")


def _match(patterns: Any, files: list[str]) -> list[str]:
    pats = [patterns] if isinstance(patterns, str) else list(patterns or [])
    regexes = [_glob_regex(str(p).lstrip("./")) for p in pats]
    return [f for f in files if _is_data_file(f) and any(r.match(f) for r in regexes)]


def _split_of(path: str) -> str | None:
    tokens = set(re.split(r"[/_.\-]", path.lower()))
    for split, words in SPLIT_WORDS.items():
        if tokens & set(words):
            return split
    return None


def _splits_by_name(files: list[str]) -> dict[str, list[str]]:
    """Splits from file names (``data/test-00000-of-00001.parquet``, ``train.jsonl``);
    files naming no split are one ``train`` split (as ``datasets`` does)."""
    data = [f for f in files if _is_data_file(f)]
    out: dict[str, list[str]] = {}
    for f in data:
        split = _split_of(f)
        if split:
            out.setdefault(split, []).append(f)
    if not out and data:
        out["train"] = data
    return {s: sorted(fs) for s, fs in out.items()}


def _info_entries(card: dict[str, Any]) -> list[dict[str, Any]]:
    info = card.get("dataset_info")
    entries = info if isinstance(info, list) else [info] if isinstance(info, dict) else []
    return [e for e in entries if isinstance(e, dict)]


def _layout(card: dict[str, Any], files: list[str]) -> tuple[list[_Config], str]:
    """The configs and their splits' files, and where they were read from."""
    configs = card.get("configs")
    if isinstance(configs, list) and any(isinstance(c, dict) for c in configs):
        out = []
        for c in configs:
            if not isinstance(c, dict):
                continue
            data_files = c.get("data_files")
            if isinstance(data_files, list) and data_files and all(
                    isinstance(d, dict) for d in data_files):
                splits = {str(d.get("split", "train")): _match(d.get("path"), files)
                          for d in data_files}
            elif isinstance(data_files, dict):
                splits = {str(k): _match(v, files) for k, v in data_files.items()}
            elif data_files:
                splits = {"train": _match(data_files, files)}
            else:
                folder = str(c.get("data_dir") or "").strip("/")
                scope = [f for f in files if not folder or f.startswith(folder + "/")]
                splits = _splits_by_name(scope)
            out.append(_Config(str(c.get("config_name", "default")), splits,
                               bool(c.get("default"))))
        return out, "the card's configs"
    entries = [e for e in _info_entries(card) if isinstance(e.get("splits"), list)]
    if entries:
        out = []
        for e in entries:
            name = str(e.get("config_name", "default"))
            scope = files
            if len(entries) > 1 and any(f.startswith(name + "/") for f in files):
                scope = [f for f in files if f.startswith(name + "/")]
            by_name = _splits_by_name(scope)
            splits = {}
            for s in e["splits"]:
                split = str(s.get("name")) if isinstance(s, dict) else str(s)
                kind = next((k for k, w in SPLIT_WORDS.items() if split in w), split)
                splits[split] = by_name.get(kind, [])
            out.append(_Config(name, splits))
        return out, "the card's dataset_info"
    splits = _splits_by_name(files)
    return ([_Config(None, splits)] if splits else []), "the file names"


def _choose_config(configs: list[_Config], source: str) -> tuple[_Config, str]:
    names = [c.name for c in configs]
    if len(configs) == 1:
        c = configs[0]
        if c.name is None:
            return c, f"no configs in the card: one default config, splits from {source}"
        return c, f"{c.name!r} is the only config ({source})"
    listed = ", ".join(str(n) for n in names)
    for c in configs:
        if c.default or c.name == "default":
            return c, f"{c.name!r} is the default config (available: {listed})"
    return configs[0], f"no default config: took the first, {names[0]!r} (available: {listed})"


def _choose_split(config: _Config) -> tuple[str, str]:
    names = [s for s, fs in config.splits.items() if fs]
    if not names:
        return "", "no split has data files"
    listed = ", ".join(names)
    for s in SPLIT_ORDER:
        if s in names:
            return s, f"{s!r} preferred (test > validation > train; available: {listed})"
    return names[0], f"no test, validation or train split: took the first, {names[0]!r} " \
                     f"(available: {listed})"


def _feature_type(f: dict[str, Any]) -> tuple[str, bool]:
    """A card feature's type name, and whether it holds a list."""
    for key in ("sequence", "list", "large_list"):
        if key in f:
            return "list", True
    if "struct" in f:
        inner = f["struct"]
        fields = inner if isinstance(inner, list) else []
        has_list = any(isinstance(x, dict) and _feature_type(x)[1] for x in fields)
        return "struct", has_list
    dtype = f.get("dtype")
    if isinstance(dtype, dict):
        return ("class_label" if "class_label" in dtype else "struct"), False
    return str(dtype or "unknown"), False


def _card_columns(card: dict[str, Any], config: str | None) -> dict[str, tuple[str, bool]]:
    entries = _info_entries(card)
    want = config or "default"
    entry = next((e for e in entries if str(e.get("config_name", "default")) == want),
                 entries[0] if len(entries) == 1 else None)
    feats = entry.get("features") if entry else None
    if isinstance(feats, list):
        return {str(f["name"]): _feature_type(f) for f in feats
                if isinstance(f, dict) and "name" in f}
    if isinstance(feats, dict):
        return {str(k): _feature_type(v if isinstance(v, dict) else {"dtype": v})
                for k, v in feats.items()}
    return {}


def _value_type(v: Any) -> tuple[str, bool]:
    if isinstance(v, list):
        return "list", True
    if isinstance(v, dict):
        return "struct", any(isinstance(x, list) for x in v.values())
    return type(v).__name__ if v is not None else "null", False


def _arrow_type(t: Any) -> tuple[str, bool]:
    import pyarrow as pa  # optional

    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "list", True
    if pa.types.is_struct(t):
        return "struct", any(_arrow_type(t.field(i).type)[1] for i in range(t.num_fields))
    return str(t), False


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.lower().endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return path.open(encoding="utf-8")


def _pyarrow_parquet() -> Any:
    try:
        import pyarrow.parquet as pq  # optional
    except ImportError as e:
        raise DatasetError("reading Parquet from the Hub needs pyarrow: pip install pyarrow "
                           "(or pip install 'assay[gallery]')") from e
    return pq


def iter_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a downloaded data file (Parquet, JSON Lines, JSON, CSV; ``.gz`` too)."""
    name = path.name.lower().removesuffix(".gz")
    try:
        if name.endswith(".parquet"):
            for batch in _pyarrow_parquet().ParquetFile(path).iter_batches(batch_size=1024):
                yield from batch.to_pylist()
        elif name.endswith(".csv"):
            with _open_text(path) as fh:
                yield from csv.DictReader(fh)
        else:
            with _open_text(path) as fh:
                text = fh.read()
            stripped = text.lstrip()
            if name.endswith(".json") and stripped.startswith(("[", "{")):
                try:
                    data = json.loads(text)
                except ValueError:
                    data = None  # JSON Lines in a .json file
                if isinstance(data, dict):  # {"data": [...]} or a single row
                    lists = [v for v in data.values() if isinstance(v, list)]
                    data = lists[0] if len(lists) == 1 else [data]
                if isinstance(data, list):
                    yield from (r for r in data if isinstance(r, dict))
                    return
            for line in text.splitlines():
                if line.strip():
                    row = json.loads(line)
                    if isinstance(row, dict):
                        yield row
    except DatasetError:
        raise
    except Exception as e:
        raise DatasetError(f"cannot read {path.name} from the Hub ({type(e).__name__}); the "
                           "file may be damaged: try another dataset") from e


def _file_columns(path: Path) -> tuple[dict[str, tuple[str, bool]], dict[str, Any]]:
    """Columns (type, is a list) of a data file, and its first row."""
    if path.name.lower().endswith(".parquet"):
        pf = _pyarrow_parquet().ParquetFile(path)
        schema = pf.schema_arrow
        cols = {n: _arrow_type(schema.field(n).type) for n in schema.names}
        first = next(iter(pf.iter_batches(batch_size=1)), None)
        rows = first.to_pylist() if first is not None else []
        return cols, (rows[0] if rows else {})
    row = next(iter_rows(path), {})
    return {k: _value_type(v) for k, v in row.items()}, row
