"""The error every BFCL decoder raises where the official decoder raises."""

from __future__ import annotations

__all__ = ["DecodeError"]


class DecodeError(Exception):
    """The output cannot be decoded into function calls (the official decoder raises)."""
