"""The GAIA loader: a local copy, or a Hub snapshot (gated: ``HF_TOKEN`` or a stored login
and accepted conditions), read into :class:`GAIAData`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.data import hf
from assay.data.cache import data_root
from assay.data.files import sha256_file
from assay.tasks.gaia.layouts import (
    GAIA_REPO,
    OFFICIAL_COUNTS,
    GAIAQuestion,
    check_split,
    config_level,
    level_arg,
    locate_metadata,
    read_tasks,
)

__all__ = ["GAIA_REPO", "OFFICIAL_COUNTS", "GAIAData", "GAIAQuestion", "load_gaia"]


@dataclass
class GAIAData:
    """The tasks of one split (config, level) and where they were read from."""

    tasks: list[GAIAQuestion]
    root: Path
    metadata_file: Path
    layout: str
    split: str
    config: str
    level: int | None
    dataset_name: str
    source: str  # gaia:local or gaia:hub

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[GAIAQuestion]:
        return iter(self.tasks)

    @property
    def answers_public(self) -> bool:
        return all(t.answer_public for t in self.tasks)

    def level_distribution(self) -> dict[int, int]:
        dist = {1: 0, 2: 0, 3: 0}
        for t in self.tasks:
            dist[t.level] += 1
        return dist

    def source_info(self) -> dict[str, Any]:
        return {"source": self.source, "dataset": self.dataset_name,
                "path": str(self.metadata_file.resolve()), "root": str(self.root),
                "layout": self.layout, "split": self.split, "config": self.config,
                "level": self.level, "content_hash": sha256_file(self.metadata_file),
                "answers_public": self.answers_public}


def load_gaia(data_dir: str | Path | None = None, *, split: str = "validation",
              config: str = "2023_all", level: int | str | None = None,
              dataset_name: str = GAIA_REPO, token: str | None = None,
              check_attachments: bool = True) -> GAIAData:
    """GAIA's ``split`` from ``data_dir``, or from a Hub snapshot when it is None."""
    check_split(split)
    config_filter = config_level(config)
    wanted = level_arg(level) if level is not None else None
    if data_dir is None:
        _adopt_old_cache(dataset_name)
        root = hf.snapshot(dataset_name, token=token, label="GAIA")
        real_root = hf.cache_dir()  # the snapshot's files are links into the cache's blobs
        source = "gaia:hub"
    else:
        root = Path(data_dir).expanduser()
        real_root = root
        source = "gaia:local"
    metadata_file, layout = locate_metadata(root, split, config)
    tasks = read_tasks(metadata_file, layout, check_attachments=check_attachments,
                       config_level_filter=config_filter, data_root=root, real_root=real_root)
    if wanted is not None:
        tasks = [t for t in tasks if t.level == wanted]
    return GAIAData(tasks=tasks, root=root, metadata_file=metadata_file, layout=layout,
                    split=split, config=config, level=wanted, dataset_name=dataset_name,
                    source=source)


def runs_here() -> tuple[bool, str]:
    """Whether GAIA's data can be had here (gated on the Hub, or cached), and why."""
    if not hf.hub_offline():
        if os.environ.get("HF_TOKEN"):
            return True, "GAIA downloads with $HF_TOKEN"
        return False, "GAIA is gated on the Hugging Face Hub: set HF_TOKEN (or run gaia " \
                      "with --data-dir)"
    try:
        load_gaia(None, check_attachments=False)
    except Exception as e:  # noqa: BLE001 - any failure means "not here"
        return False, f"GAIA is not in the local Hugging Face cache ({str(e)[:80]})"
    return True, "GAIA is in the local Hugging Face cache"


def _adopt_old_cache(dataset_name: str) -> None:
    """Move an older assay's ``<data root>/gaia`` snapshot into the Hub cache (relative links)."""
    folder = f"datasets--{dataset_name.replace('/', '--')}"
    old, new = data_root() / "gaia" / folder, hf.cache_dir() / folder
    if old.is_dir() and not new.exists():
        new.parent.mkdir(parents=True, exist_ok=True)
        old.rename(new)
