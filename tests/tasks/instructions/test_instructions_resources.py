"""The NLTK data IFEval's checkers read is kept in the data cache, wherever that is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.data.cache import ENV
from assay.tasks.instructions import resources


@pytest.mark.parametrize("moved", [False, True])
def test_nltk_data_lands_under_the_data_cache_root(workspace: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   real_wheel: Any, moved: bool) -> None:
    llama = real_wheel(resources.LLAMA_PACKAGE, resources.LLAMA_VERSION)
    root = (tmp_path / "cache" if moved else workspace / "data").resolve()  # links followed
    if moved:
        monkeypatch.setenv(ENV, str(root))
    folder = resources.ensure_nltk_data("ifeval", downloads=llama.parent)
    assert folder == root / "nltk"
    assert resources.missing(folder, "ifeval") == []
    assert (workspace / "data").exists() is not moved  # nothing beside a moved cache
