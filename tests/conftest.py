"""Shared fixtures: an isolated workspace per test and the fake OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["assay.testing.pytest_plugin"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_QA = REPO / "examples" / "qa_example.jsonl"


@pytest.fixture(autouse=True)
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own ASSAY_HOME and never sees a real key or endpoint."""
    home = tmp_path / "assay-home"
    monkeypatch.setenv("ASSAY_HOME", str(home))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home
