"""Both layouts of ``gaia-benchmark/GAIA`` as :class:`GAIAQuestion` records, without ``datasets``:
``2023/<split>/metadata.jsonl`` or ``metadata[.levelN].parquet``. Attachments outside the
dataset folder (absolute, ``../``, symlinks) are refused: text attachments enter the prompt."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.data.files import read_jsonl
from assay.errors import DatasetError

GAIA_REPO = "gaia-benchmark/GAIA"
OFFICIAL_COUNTS: dict[str, dict[int, int]] = {
    "validation": {1: 53, 2: 86, 3: 26},
    "test": {1: 93, 2: 159, 3: 49},
}
SPLITS = ("validation", "test")
CONFIGS = ("2023_all", "2023_level1", "2023_level2", "2023_level3")
REQUIRED_FIELDS = ("task_id", "Question", "Level", "Final answer")
HIDDEN_ANSWER = "?"

_BULLET = re.compile(r"^\s*(?:\d+\s*[.)]|[-*\u2022])\s*")


@dataclass
class GAIAQuestion:
    """One GAIA task, its attachment resolved to a local path; ``raw``: the row as read."""

    task_id: str
    question: str
    level: int
    final_answer: str
    file_name: str
    file_path: Path | None
    annotator_metadata: dict[str, Any] = field(default_factory=dict)
    steps: int | None = None  # "Number of steps" when it parses as an int
    tools: list[str] | str | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def has_file(self) -> bool:
        return bool(self.file_name)

    @property
    def answer_public(self) -> bool:
        """False when the gold answer is hidden (``"?"``, as in the test split)."""
        return self.final_answer.strip() != HIDDEN_ANSWER


def config_level(config: str) -> int | None:
    """``2023_all`` -> None, ``2023_levelN`` -> N; anything else is an error."""
    if config == "2023_all":
        return None
    m = re.fullmatch(r"2023_level([123])", config or "")
    if not m:
        raise DatasetError(f"unknown GAIA config {config!r}; use one of {', '.join(CONFIGS)}")
    return int(m.group(1))


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise DatasetError(f"unknown GAIA split {split!r}; use 'validation' or 'test'")


def locate_metadata(root: Path, split: str, config: str) -> tuple[Path, str]:
    """``(metadata file, "jsonl" | "parquet")``, looked for in ``root/2023/<split>``,
    ``root/<split>`` and ``root``."""
    check_split(split)
    level = config_level(config)
    root = Path(root).expanduser()
    if not root.exists():
        raise DatasetError(f"GAIA data folder {root} does not exist; pass --data-dir to a copy "
                           f"of {GAIA_REPO} (the folder holding 2023/)")
    if root.is_file():
        raise DatasetError(f"{root} is a file; pass --data-dir to the GAIA folder holding 2023/")
    names = ["metadata.jsonl"]
    if level is not None:
        names.append(f"metadata.level{level}.parquet")
    names.append("metadata.parquet")
    tried: list[str] = []
    for base in (root / "2023" / split, root / split, root):
        for name in names:
            cand = base / name
            if cand.is_file():
                return cand, "jsonl" if name.endswith(".jsonl") else "parquet"
            tried.append(str(cand.relative_to(root)))
    raise DatasetError(
        f"no GAIA metadata for split {split!r} (config {config!r}) under {root}; looked for "
        f"{', '.join(tried)}; pass --data-dir to a copy of {GAIA_REPO} (the folder holding 2023/)"
    )


def _read_parquet(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        import pyarrow.parquet as pq  # optional
    except ImportError as e:
        raise DatasetError(
            f"{path} is in GAIA's parquet layout, which needs pyarrow: pip install 'assay[hf]'"
        ) from e
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as e:  # pyarrow raises ArrowInvalid, OSError, ...
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DatasetError(f"{path}: not a readable parquet file ({msg})") from e
    return rows, [f"{path}[row {i}]" for i in range(len(rows))]


def _read_rows(path: Path, layout: str) -> tuple[list[dict[str, Any]], list[str]]:
    if layout == "jsonl":
        rows = read_jsonl(path)
        return rows.rows, rows.locations
    return _read_parquet(path)


def _as_int(value: Any) -> int | None:
    """An int, or a digit string (``"1"``) as one; None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def as_level(value: Any) -> int | None:
    """1, 2 or 3 from an int or a digit string; None for anything else."""
    level = _as_int(value)
    return level if level in (1, 2, 3) else None


def _parse_level(value: Any, loc: str, task_id: str) -> int:
    level = as_level(value)
    if level is None:
        raise DatasetError(f"{loc}: task {task_id}: Level must be 1, 2 or 3 (an int or a "
                           f"string such as \"1\"), got {value!r}")
    return level


def level_arg(value: Any) -> int:
    """A level argument (1, 2, 3 or a digit string) as an int; anything else is an error."""
    level = as_level(value)
    if level is None:
        raise DatasetError(f"GAIA level must be 1, 2 or 3, got {value!r}")
    return level


def _as_text(value: Any, loc: str, task_id: str, name: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # hand-made copies sometimes store numeric answers as numbers
    raise DatasetError(f"{loc}: task {task_id}: {name!r} must be a string, "
                       f"got {type(value).__name__}")


def _metadata(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if v is not None}


def parse_steps(metadata: dict[str, Any]) -> int | None:
    return _as_int(metadata.get("Number of steps"))


def parse_tools(metadata: dict[str, Any]) -> list[str] | str | None:
    """The ``Tools`` text as a list of tool names (numbering removed); None when absent."""
    value = metadata.get("Tools")
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, list):
        return [str(v) for v in value]
    if not isinstance(value, str):
        return str(value)
    if value.strip().lower() in ("none", "no tools", "n/a", "-"):
        return []
    return [t for t in (_BULLET.sub("", line).strip() for line in value.splitlines()) if t]


def _repo_root(metadata_file: Path) -> Path:
    split_dir = metadata_file.parent
    if split_dir.parent.name == "2023":
        return split_dir.parent.parent
    return split_dir


def _resolve_attachment(row: dict[str, Any], file_name: str, metadata_file: Path,
                        layout: str) -> list[tuple[str, Path]]:
    """``[(field, path)]`` candidates for a row's attachment, best first."""
    base = metadata_file.parent
    fp = row.get("file_path") or ""
    fp = fp if isinstance(fp, str) else ""
    cands: list[tuple[str, Path]] = []
    if fp:
        p = Path(fp)
        cands.append(("file_path", p if p.is_absolute() else _repo_root(metadata_file) / p))
    if file_name:
        cands.insert(0 if layout == "jsonl" else len(cands), ("file_name", base / file_name))
    if fp:
        cands.append(("file_path", base / Path(fp).name))
    seen: dict[Path, tuple[str, Path]] = {}
    for name, path in cands:
        seen.setdefault(path, (name, path))
    return list(seen.values())


def _within(path: Path, folder: Path, real_root: Path) -> bool:
    """Whether ``path`` lies in ``folder`` as written (no ``../``, not absolute) and in
    ``real_root`` with symlinks followed."""
    try:
        lexical = Path(os.path.normpath(os.path.abspath(path)))
        if not lexical.is_relative_to(Path(os.path.abspath(folder))):
            return False
        return path.resolve().is_relative_to(real_root.resolve())
    except (OSError, ValueError, RuntimeError):  # NUL in the name, a symlink loop, ...
        return False


def _check_inside(cands: list[tuple[str, Path]], row: dict[str, Any], loc: str, tid: str,
                  folder: Path, real_root: Path) -> None:
    for name, path in cands:
        if not _within(path, folder, real_root):
            raise DatasetError(
                f"{loc}: task {tid}: attachment {name} {row.get(name)!r} points outside the "
                f"dataset folder {folder}; refusing to read it (fix the metadata or --data-dir)")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def read_tasks(metadata_file: Path, layout: str, *, check_attachments: bool = True,
               config_level_filter: int | None = None, data_root: Path | None = None,
               real_root: Path | None = None) -> list[GAIAQuestion]:
    """Every row as a :class:`GAIAQuestion`. Attachments must lie in ``data_root`` (default:
    the metadata's repository folder) and, links followed, in ``real_root`` (default
    ``data_root``; a Hub snapshot's files link into its cache)."""
    folder = Path(data_root) if data_root is not None else _repo_root(metadata_file)
    real = Path(real_root) if real_root is not None else folder
    rows, locs = _read_rows(metadata_file, layout)
    tasks: list[GAIAQuestion] = []
    seen: dict[str, str] = {}
    for row, loc in zip(rows, locs, strict=True):
        tid_raw = row.get("task_id")
        tid = str(tid_raw).strip() if tid_raw is not None else ""
        for name in REQUIRED_FIELDS:
            value = row.get(name)
            if value is None or (name == "task_id" and not tid):
                who = f" (task {tid})" if tid else ""
                raise DatasetError(f"{loc}: missing required field {name!r}{who}")
        if tid in seen:
            raise DatasetError(f"{loc}: duplicate task_id {tid} (first at {seen[tid]})")
        seen[tid] = loc
        level = _parse_level(row["Level"], loc, tid)
        question = _as_text(row["Question"], loc, tid, "Question")
        answer = _as_text(row["Final answer"], loc, tid, "Final answer")
        file_name = row.get("file_name") or ""
        if not isinstance(file_name, str):
            raise DatasetError(f"{loc}: task {tid}: 'file_name' must be a string")
        file_path: Path | None = None
        if file_name or row.get("file_path"):
            cands = _resolve_attachment(row, file_name, metadata_file, layout)
            _check_inside(cands, row, loc, tid, folder, real)
            file_path = next((c for _, c in cands if _is_file(c)), None)
            if file_path is None and check_attachments:
                raise DatasetError(f"{tid}: attachment {cands[0][1]} is missing; re-download "
                                   "GAIA or fix --data-dir")
            if not file_name and file_path is not None:
                file_name = file_path.name
        md = _metadata(row.get("Annotator Metadata"))
        tasks.append(GAIAQuestion(
            task_id=tid, question=question, level=level, final_answer=answer,
            file_name=file_name, file_path=file_path, annotator_metadata=md,
            steps=parse_steps(md), tools=parse_tools(md), raw=dict(row),
        ))
    if not tasks:
        raise DatasetError(f"{metadata_file}: no GAIA tasks in the file")
    if config_level_filter is not None:
        tasks = [t for t in tasks if t.level == config_level_filter]
    return tasks
