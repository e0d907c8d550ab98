"""Test helpers: a real OpenAI-compatible fake HTTP server and pytest fixtures for it.
Re-exported lazily, so ``python -m assay.testing.fake_server`` does not import it twice."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.testing.fake_server import FakeServer, FaultPlan, Rule

__all__ = ["FakeServer", "FaultPlan", "Rule"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from assay.testing import fake_server  # startup

        return getattr(fake_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
