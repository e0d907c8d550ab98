"""Fixtures of the ``assay view`` tests: one store of real runs (qa, BFCL, GAIA, converse)
made once per session by the engine against the fake server, plus helpers importable as
``viewhelpers``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import viewhelpers as vh  # noqa: E402

BFCL_MISSING = ("the BFCL run needs the official BFCL data: pip install --no-deps "
                "bfcl-eval==2026.3.23 (scripts/test does it)")


@pytest.fixture(scope="session")
def real_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """``(store path, {task: run id})`` of four finished runs made by the real engine."""
    if importlib.util.find_spec("bfcl_eval") is None:
        pytest.skip(BFCL_MISSING)
    home = tmp_path_factory.mktemp("view-real") / "home"
    ids = vh.make_real_runs(home)
    return home / "assay.db", ids
