"""Running the event loop: uvloop when it is installed (faster per request), else asyncio."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop when available."""
    try:
        import uvloop  # startup
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
