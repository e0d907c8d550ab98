"""The GAIA loader: a local copy or a Hub snapshot, read into plain task records.

:func:`load_gaia` finds the data (``data_dir``, or a Hub snapshot into the data cache,
:func:`assay.data.hf.snapshot`; GAIA is gated, so that needs ``HF_TOKEN`` or a stored
login and accepted conditions on the dataset page),
reads either layout (:mod:`~assay.tasks.gaia.layouts`) and returns a
:class:`GAIAData`: the :class:`GAIAQuestion` records and where they came from. The
``gaia`` task builds its samples from it; the book's dict-returning ``GAIADataset``
is a thin adapter over it in :mod:`assay.compat`.
"""

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
    #: ``gaia:local`` (a data folder) or ``gaia:hub`` (a downloaded snapshot)
    source: str

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[GAIAQuestion]:
        return iter(self.tasks)

    @property
    def answers_public(self) -> bool:
        """False when any gold answer is hidden (``"?"``, as in the test split)."""
        return all(t.answer_public for t in self.tasks)

    def level_distribution(self) -> dict[int, int]:
        """Number of tasks per level (1, 2 and 3 always present)."""
        dist = {1: 0, 2: 0, 3: 0}
        for t in self.tasks:
            dist[t.level] += 1
        return dist

    def source_info(self) -> dict[str, Any]:
        """Identity of the data, recorded with each run."""
        return {
            "source": self.source,
            "dataset": self.dataset_name,
            "path": str(self.metadata_file.resolve()),
            "root": str(self.root),
            "layout": self.layout,
            "split": self.split,
            "config": self.config,
            "level": self.level,
            "content_hash": sha256_file(self.metadata_file),
            "answers_public": self.answers_public,
        }


def load_gaia(data_dir: str | Path | None = None, *, split: str = "validation",
              config: str = "2023_all", level: int | str | None = None,
              dataset_name: str = GAIA_REPO, token: str | None = None,
              check_attachments: bool = True) -> GAIAData:
    """Read GAIA's ``split`` from ``data_dir``, or from a Hub snapshot when it is None.

    ``level`` keeps one level (1-3, an int or a digit string); ``config`` is one of
    the repository's configs (``2023_all``, ``2023_level1`` ...). With
    ``check_attachments`` (the default) a missing attachment is an error.
    Every mistake is a one-line :class:`~assay.errors.DatasetError`.
    """
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
    """Whether GAIA's data can be had here, and why: from the Hub, where it is gated
    (``HF_TOKEN``), or offline from a copy in the local cache."""
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
    """Move a snapshot an older assay kept in ``<data root>/gaia`` into the Hub cache
    (its links are relative, so they still hold), so it is neither lost nor fetched again."""
    folder = f"datasets--{dataset_name.replace('/', '--')}"
    old, new = data_root() / "gaia" / folder, hf.cache_dir() / folder
    if old.is_dir() and not new.exists():
        new.parent.mkdir(parents=True, exist_ok=True)
        old.rename(new)
