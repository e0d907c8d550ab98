"""GAIA tasks read straight from the files of ``gaia-benchmark/GAIA``.

Two layouts exist and both are read (HF ``datasets`` is never imported: 4.x no
longer runs GAIA's loading script):

* **original**: ``2023/<split>/metadata.jsonl``, attachments beside it under ``file_name``;
* **current**: ``2023/<split>/metadata.parquet`` and ``metadata.level{1,2,3}.parquet``
  (configs ``2023_level1..3``), with a ``file_path`` column relative to the repository root.

``--data-dir`` may point at the repository root (the folder holding ``2023/``), at
``2023/`` or at a split folder. Without it the snapshot is downloaded with
``huggingface_hub.snapshot_download`` into ``$ASSAY_HOME/data/gaia``; GAIA is gated,
so that needs ``HF_TOKEN`` and accepted conditions on the dataset page.

Every task's ``Level`` is cast to int, every attachment is resolved and checked,
and a bad row is a one-line :class:`~assay.errors.DatasetError` naming ``file:line``.
An attachment must lie inside the dataset folder (``--data-dir``, or the download
cache): a ``file_name`` or ``file_path`` that is absolute, climbs out with ``../`` or
is a symlink to a file elsewhere is refused, since text attachments are put into
the prompt and so into the stored results.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.data.files import read_jsonl, sha256_file
from assay.errors import DatasetError
from assay.store.sqlite import workspace_dir

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
class GAIATask:
    """One GAIA task, with its attachment resolved to a local path."""

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
        return self.final_answer.strip() != HIDDEN_ANSWER

    def to_book_item(self) -> dict[str, Any]:
        """The item shape of the book's ``GAIADataset``."""
        return {
            "task_id": self.task_id,
            "question": self.question,
            "level": self.level,
            "final_answer": self.final_answer,
            "file_name": self.file_name,
            "file_path": str(self.file_path) if self.file_path else "",
            "annotator_metadata": dict(self.annotator_metadata),
            "steps": self.steps,
            "tools": list(self.tools) if isinstance(self.tools, list) else self.tools,
            "raw_item": self.raw,
        }


# ---------------------------------------------------------------------------------------------
# Locating the metadata file


def config_level(config: str) -> int | None:
    """``2023_all`` -> None, ``2023_levelN`` -> N; anything else is an error."""
    if config == "2023_all":
        return None
    m = re.fullmatch(r"2023_level([123])", config or "")
    if not m:
        raise DatasetError(f"unknown GAIA config {config!r}; use one of {', '.join(CONFIGS)}")
    return int(m.group(1))


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise DatasetError(f"unknown GAIA split {split!r}; use 'validation' or 'test'")


def locate_metadata(root: Path, split: str, config: str) -> tuple[Path, str]:
    """Find the metadata file of ``split``/``config`` under ``root``; returns (file, layout).

    Looked for, in order, in ``root/2023/<split>``, ``root/<split>`` and ``root``:
    ``metadata.jsonl``, then ``metadata.level<N>.parquet`` (level configs), then
    ``metadata.parquet``. The layout is ``"jsonl"`` or ``"parquet"``.
    """
    _check_split(split)
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


# ---------------------------------------------------------------------------------------------
# Reading rows


def _read_parquet(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        import pyarrow.parquet as pq
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


def as_level(value: Any) -> int | None:
    """1, 2 or 3 from an int or a digit string (``"1"``); None for anything else."""
    level: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        level = value
    elif isinstance(value, str) and value.strip().isdigit():
        level = int(value.strip())
    return level if level in (1, 2, 3) else None


def _parse_level(value: Any, loc: str, task_id: str) -> int:
    level = as_level(value)
    if level is None:
        raise DatasetError(f"{loc}: task {task_id}: Level must be 1, 2 or 3 (an int or a "
                           f"string such as \"1\"), got {value!r}")
    return level


def _level_arg(value: Any) -> int:
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
    """``int`` of ``Number of steps`` when it parses, else None."""
    value = metadata.get("Number of steps")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


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
                        layout: str) -> tuple[list[tuple[str, Path]], str]:
    """Candidate paths of a row's attachment, best first, each with the field it comes from.

    Returns ``[(field, path), ...]`` (``field`` is ``"file_name"`` or ``"file_path"``)
    and the row's ``file_path`` value.
    """
    base = metadata_file.parent
    fp = row.get("file_path") or ""
    fp = fp if isinstance(fp, str) else ""
    cands: list[tuple[str, Path]] = []
    if fp:
        p = Path(fp)
        cands.append(("file_path", p if p.is_absolute() else _repo_root(metadata_file) / p))
    if file_name:
        if layout == "jsonl":
            cands.insert(0, ("file_name", base / file_name))
        else:
            cands.append(("file_name", base / file_name))
    if fp:
        cands.append(("file_path", base / Path(fp).name))
    seen: list[tuple[str, Path]] = []
    for c in cands:
        if c[1] not in [s[1] for s in seen]:
            seen.append(c)
    return seen, fp


def _within(path: Path, folder: Path, real_root: Path) -> bool:
    """Whether ``path`` lies in ``folder`` as written and in ``real_root`` once resolved.

    The first test catches ``../`` and absolute paths; the second, with every
    symlink followed (:meth:`Path.resolve`), catches links that point elsewhere.
    """
    try:
        lexical = Path(os.path.normpath(os.path.abspath(path)))
        if not lexical.is_relative_to(Path(os.path.abspath(folder))):
            return False
        return path.resolve().is_relative_to(real_root.resolve())
    except (OSError, ValueError, RuntimeError):  # NUL in the name, a symlink loop, ...
        return False


def _check_inside(cands: list[tuple[str, Path]], row: dict[str, Any], loc: str, tid: str,
                  folder: Path, real_root: Path) -> None:
    """Refuse a row whose attachment, by any field, would be read from outside the data."""
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
               real_root: Path | None = None) -> list[GAIATask]:
    """Parse every row of a metadata file into :class:`GAIATask` (see the module docstring).

    Attachments must lie inside ``data_root`` (default: the repository folder the
    metadata belongs to), and, with symlinks followed, inside ``real_root``
    (default ``data_root``; a Hub snapshot's files link into its cache folder). An
    attachment outside is a :class:`DatasetError` naming the task and the field,
    whether or not attachments are checked for existence.
    """
    folder = Path(data_root) if data_root is not None else _repo_root(metadata_file)
    real = Path(real_root) if real_root is not None else folder
    rows, locs = _read_rows(metadata_file, layout)
    tasks: list[GAIATask] = []
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
            cands, _ = _resolve_attachment(row, file_name, metadata_file, layout)
            _check_inside(cands, row, loc, tid, folder, real)
            file_path = next((c for _, c in cands if _is_file(c)), None)
            if file_path is None and check_attachments:
                raise DatasetError(f"{tid}: attachment {cands[0][1]} is missing; re-download "
                                   "GAIA or fix --data-dir")
            if not file_name and file_path is not None:
                file_name = file_path.name
        md = _metadata(row.get("Annotator Metadata"))
        tasks.append(GAIATask(
            task_id=tid, question=question, level=level, final_answer=answer,
            file_name=file_name, file_path=file_path, annotator_metadata=md,
            steps=parse_steps(md), tools=parse_tools(md), raw=dict(row),
        ))
    if not tasks:
        raise DatasetError(f"{metadata_file}: no GAIA tasks in the file")
    if config_level_filter is not None:
        tasks = [t for t in tasks if t.level == config_level_filter]
    return tasks


# ---------------------------------------------------------------------------------------------
# Downloading


def cache_root() -> Path:
    """Where downloaded GAIA snapshots live: ``$ASSAY_HOME/data/gaia``."""
    return workspace_dir() / "data" / "gaia"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in ("1", "ON", "YES", "TRUE")


def _has_implicit_token() -> bool:
    try:
        from huggingface_hub import get_token

        return bool(get_token())
    except Exception:  # only used to word a message
        return False


def _is_connection_error(exc: BaseException) -> bool:
    """Connection trouble from the stdlib, requests or httpx, anywhere in the cause chain."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 10:
        if isinstance(cur, (ConnectionError, TimeoutError)):
            return True
        names = {c.__name__ for c in type(cur).__mro__}
        if names & {"ConnectError", "ConnectTimeout", "TimeoutException", "NetworkError",
                    "OfflineModeIsEnabled", "LocalEntryNotFoundError", "ProxyError"}:
            return True
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return False


def download(dataset_name: str = GAIA_REPO, token: str | None = None,
             cache_dir: Path | None = None) -> Path:
    """Snapshot ``dataset_name`` from the Hub (cached); returns the snapshot folder.

    The token is ``token`` or ``HF_TOKEN`` (else huggingface_hub's stored login). With
    ``HF_HUB_OFFLINE=1`` only a cached snapshot is used. Failures become one-line
    :class:`DatasetError`; the token is never part of a message.
    """
    try:
        from huggingface_hub import constants, snapshot_download
        from huggingface_hub.utils import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError
    except ImportError as e:  # pragma: no cover - huggingface_hub is a dependency
        raise DatasetError("downloading GAIA needs huggingface_hub: pip install huggingface_hub"
                           ) from e
    token = token or os.environ.get("HF_TOKEN") or None
    cache = Path(cache_dir) if cache_dir is not None else cache_root()
    offline = _truthy(os.environ.get("HF_HUB_OFFLINE")) or bool(constants.HF_HUB_OFFLINE)
    endpoint = (os.environ.get("HF_ENDPOINT") or "").rstrip("/") or None  # read now, not at import
    page = f"https://huggingface.co/datasets/{dataset_name}"
    offline_msg = (
        "cannot reach the Hugging Face Hub to download GAIA (offline?); download it elsewhere "
        f"with huggingface-cli download {dataset_name} --repo-type dataset --local-dir DIR "
        "(hf download in newer huggingface_hub) and pass --data-dir DIR"
        + (" (HF_HUB_OFFLINE=1 is set, so only a cached copy could be used)" if offline else "")
    )
    try:
        cache.mkdir(parents=True, exist_ok=True)
        path = snapshot_download(repo_id=dataset_name, repo_type="dataset", token=token,
                                 cache_dir=str(cache), local_files_only=offline,
                                 endpoint=endpoint)
    except HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        if isinstance(e, GatedRepoError) or status in (401, 403):
            no_token = "" if (token or _has_implicit_token()) else "no HF_TOKEN is set; "
            raise DatasetError(
                f"GAIA is gated: {no_token}request access at {page}, then set HF_TOKEN "
                "(or pass --data-dir to a local copy)"
            ) from e
        if isinstance(e, RepositoryNotFoundError) or status == 404:
            raise DatasetError(f"dataset {dataset_name} was not found on the Hugging Face Hub; "
                               "check the name or pass --data-dir to a local copy") from e
        if _is_connection_error(e):
            raise DatasetError(offline_msg) from e
        raise DatasetError(f"could not download {dataset_name} from the Hugging Face Hub "
                           f"(HTTP {status}); try again later or pass --data-dir to a local "
                           "copy") from e
    except Exception as e:
        if _is_connection_error(e):
            raise DatasetError(offline_msg) from e
        raise DatasetError(f"could not download {dataset_name} from the Hugging Face Hub "
                           f"({type(e).__name__}); pass --data-dir to a local copy") from e
    return Path(path)


# ---------------------------------------------------------------------------------------------
# The book's dataset class


class GAIADataset:
    """The book's ``GAIADataset`` over local files or a Hub snapshot.

    ``GAIADataset(local_data_dir="GAIA", split="validation", level=1).load()`` returns
    book items (see :meth:`GAIATask.to_book_item`); ``.tasks`` holds the
    :class:`GAIATask` objects.
    """

    def __init__(self, dataset_name: str = GAIA_REPO, split: str = "validation",
                 level: int | None = None, local_data_dir: str | Path | None = None,
                 config: str = "2023_all", token: str | None = None,
                 max_attachment_check: bool = True) -> None:
        _check_split(split)
        config_level(config)
        if level is not None:
            level = _level_arg(level)
        self.dataset_name = dataset_name
        self.split = split
        self.level = level
        self.local_data_dir = local_data_dir
        self.config = config
        self.token = token
        self.max_attachment_check = max_attachment_check
        self.tasks: list[GAIATask] = []
        self.data: list[dict[str, Any]] = []
        self.metadata_file: Path | None = None
        self.layout: str | None = None
        self.root: Path | None = None
        self._loaded = False

    def load(self) -> list[dict[str, Any]]:
        """Read the tasks (downloading first when no local folder is given)."""
        if self.local_data_dir is None:
            self.root = download(self.dataset_name, self.token)
            real_root = cache_root()  # the snapshot's files are links into the cache's blobs
        else:
            self.root = Path(self.local_data_dir).expanduser()
            real_root = self.root
        self.metadata_file, self.layout = locate_metadata(self.root, self.split, self.config)
        tasks = read_tasks(self.metadata_file, self.layout,
                           check_attachments=self.max_attachment_check,
                           config_level_filter=config_level(self.config),
                           data_root=self.root, real_root=real_root)
        if self.level is not None:
            tasks = [t for t in tasks if t.level == self.level]
        self.tasks = tasks
        self.data = [t.to_book_item() for t in tasks]
        self._loaded = True
        return self.data

    def _ensure(self) -> None:
        if not self._loaded:
            self.load()

    @property
    def answers_public(self) -> bool:
        """False when any gold answer is hidden (``"?"``, as in the test split)."""
        self._ensure()
        return all(t.answer_public for t in self.tasks)

    def get_level_distribution(self) -> dict[int, int]:
        self._ensure()
        dist = {1: 0, 2: 0, 3: 0}
        for t in self.tasks:
            dist[t.level] += 1
        return dist

    def get_by_level(self, level: int | str) -> list[dict[str, Any]]:
        self._ensure()
        want = _level_arg(level)
        return [t.to_book_item() for t in self.tasks if t.level == want]

    def get_statistics(self) -> dict[str, Any]:
        """Counts as in the book, plus answer availability and where the data came from."""
        self._ensure()
        dist = self.get_level_distribution()
        full = self.level is None and self.config == "2023_all"
        official = OFFICIAL_COUNTS[self.split]
        return {
            "total_samples": len(self.tasks),
            "level_distribution": dist,
            "samples_with_files": sum(1 for t in self.tasks if t.has_file),
            "missing_attachments": sum(1 for t in self.tasks if t.has_file and not t.file_path),
            "answers_public": self.answers_public,
            "hidden_answers": sum(1 for t in self.tasks if not t.answer_public),
            "split": self.split,
            "config": self.config,
            "level": self.level,
            "source": self.source_info()["source"],
            "official_counts": dict(official),
            "matches_official_counts": (dist == official) if full else None,
        }

    def source_info(self) -> dict[str, Any]:
        """Identity of the data, recorded with each run."""
        self._ensure()
        assert self.metadata_file is not None
        return {
            "source": "gaia:local" if self.local_data_dir is not None else "gaia:hub",
            "dataset": self.dataset_name,
            "path": str(self.metadata_file.resolve()),
            "root": str(self.root),
            "layout": self.layout,
            "split": self.split,
            "config": self.config,
            "level": self.level,
            "content_hash": sha256_file(self.metadata_file),
            "answers_public": all(t.answer_public for t in self.tasks),
        }

    def __len__(self) -> int:
        self._ensure()
        return len(self.tasks)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._ensure()
        return iter(list(self.data))
