"""τ²-bench's official code for these tests (:mod:`tau2_source`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.core import workers

sys.path.insert(0, str(Path(__file__).parent))  # official_tau2, replay: imported by workers too
sys.path.insert(0, str(Path(__file__).parents[2]))  # runwatch, tau2_source
import tau2_source  # noqa: E402


@pytest.fixture(scope="session")
def tau2_root() -> Path:
    return tau2_source.tau2_root()


@pytest.fixture(autouse=True)
def no_workers_left() -> Iterator[None]:
    yield
    workers.shutdown()
