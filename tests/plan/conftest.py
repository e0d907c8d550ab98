"""Fixtures of the planner's tests: the Hugging Face Hub turned back on, and a fake Hub."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.testing.fake_hub import FakeHub


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Undo the autouse offline switch and hide any stored login; returns a pointer-setter
    (as in tests/tasks/gaia/test_gaia_hub.py: only HF_ENDPOINT is set, the constants
    huggingface_hub read at import are left alone, so the code must read it at call time)."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-stored-token"))
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")

    def point_at(url: str) -> None:
        monkeypatch.setenv("HF_ENDPOINT", url)

    return point_at


@pytest.fixture
def hub(online) -> Iterator[FakeHub]:
    """A running fake Hub that HF_ENDPOINT points at."""
    with FakeHub() as fake:
        online(fake.url)
        yield fake
