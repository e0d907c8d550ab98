"""The sandbox tests' shared fixtures: bwrap required (skipped, naming its install, where it
is missing) unless a test asks for a PATH without it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from assay import sandbox


@pytest.fixture(autouse=True)
def needs_bwrap(request: pytest.FixtureRequest) -> None:
    if "no_bwrap" in request.fixturenames:  # a test of the path without bwrap runs anywhere
        return
    sandbox.bwrap_problem.cache_clear()
    problem = sandbox.bwrap_problem()
    if problem:
        # skipped where bwrap is missing (the reason names its install: an allowed skip,
        # tests/conftest.py); any other reason it cannot run stays a failure there
        pytest.skip(f"these tests check bubblewrap isolation, which does not work here: "
                    f"{problem}")


@pytest.fixture
def no_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A PATH without bwrap (python is launched by absolute path, so it still runs)."""
    empty = tmp_path / "bin-without-bwrap"
    empty.mkdir()
    with monkeypatch.context() as m:
        m.setenv("PATH", str(empty))
        sandbox.bwrap_problem.cache_clear()
        try:
            yield
        finally:
            sandbox.bwrap_problem.cache_clear()
    sandbox.bwrap_problem.cache_clear()
