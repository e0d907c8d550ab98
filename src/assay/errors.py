"""One error hierarchy for everything a user can get wrong; every message says what to fix.
The CLI prints ``str(error)`` on one line and exits 2 (``--debug``: the traceback)."""

from __future__ import annotations


class AssayError(Exception):
    """Base class for user-facing errors: ``problem`` and, apart, the ``hint`` that fixes it
    (a caller that knows a better fix replaces the hint, not a cut of the message)."""

    def __init__(self, problem: str = "", *, hint: str | None = None) -> None:
        super().__init__(problem)
        self.problem, self.hint = problem, hint

    def __str__(self) -> str:  # keep messages on one line
        text = f"{self.problem}; {self.hint}" if self.hint else str(self.problem)
        return " ".join(text.split())


class DatasetError(AssayError):
    """A dataset file or row is missing, malformed or lacks a required field."""


class ModelSpecError(AssayError):
    """A model spec string does not name a known provider or cannot be loaded."""


class ConfigError(AssayError):
    """A CLI option, run spec or plan file is invalid."""


class RunNotFoundError(AssayError):
    """A run id does not exist in the workspace store."""


class ModelCallError(Exception):
    """A model call failed (``transient``: retrying may help). Not an ``AssayError``: it is
    its sample's error and does not stop the run."""

    def __init__(self, message: str, *, transient: bool, retry_after: float | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.transient, self.retry_after, self.status = transient, retry_after, status


class StoreError(AssayError):
    """The workspace store cannot be used (locked by another process too long, unreadable)."""
