"""Memory categories: the prerequisite chain of each scenario, run once, before its questions.

Official: ``_llm_response_generation.py:260-350``, ``utils.py:714-752`` (2026.3.23); only
prerequisites flush snapshots (``base_handler.py:371-376``), and they are not scored. Here the
first question of a scenario runs the chain in its own ``solve`` (recorded in
``metadata["memory"]``), the others wait: one chain per (category, scenario, model, epoch, mode)
behind an :class:`asyncio.Lock`; a timed-out chain is rerun, a failed one fails the scenario.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import tempfile
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import ModelCallError
from assay.store.sqlite import workspace_dir

__all__ = ["ChainResult", "MemoryChains"]


@dataclass
class ChainResult:
    """A finished chain: its snapshot folder, final snapshot and prerequisites' transcripts."""

    folder: Path
    snapshot: Any
    snapshot_sha256: str
    prereqs: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Chain:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    result: ChainResult | None = None
    error: str | None = None
    attempts: int = 0


#: runs one chain into a folder and returns the prerequisites' transcripts
ChainRunner = Callable[[Path], Awaitable[list[dict[str, Any]]]]


class MemoryChains:
    """The prerequisite chains of one task (see the module docstring)."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self._chains: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                 dict[tuple[Any, ...], _Chain]] = (
            weakref.WeakKeyDictionary())

    def _folder(self, key: tuple[Any, ...], attempt: int) -> Path:
        if self._root is None:
            base = workspace_dir() / "tmp"
            base.mkdir(parents=True, exist_ok=True)
            self._root = Path(tempfile.mkdtemp(prefix="bfcl-memory-", dir=base)).resolve()
            weakref.finalize(self, shutil.rmtree, self._root, True)
        digest = hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()[:16]
        folder = self._root / f"{digest}-{attempt}"
        folder.mkdir(parents=True)
        return folder

    async def chain(self, key: tuple[Any, ...], scenario: str, category: str,
                    run: ChainRunner) -> tuple[ChainResult, bool]:
        """The finished chain for ``key`` and whether this call ran it (``run`` is called
        at most once at a time per key, and again only after a cut-off attempt)."""
        per_loop = self._chains.setdefault(asyncio.get_running_loop(), {})
        state = per_loop.setdefault(key, _Chain())
        async with state.lock:
            if state.result is not None:
                return state.result, False
            if state.error is not None:
                raise ModelCallError(state.error, transient=False)
            state.attempts += 1
            folder = self._folder(key, state.attempts)
            try:
                prereqs = await run(folder)
            except ModelCallError as e:
                state.error = f"memory prerequisites of {scenario!r} failed: {e}"
                shutil.rmtree(folder, ignore_errors=True)
                raise ModelCallError(state.error, transient=False) from e
            except Exception as e:
                state.error = (f"memory prerequisites of {scenario!r} failed: "
                               f"{type(e).__name__}: {e}")
                shutil.rmtree(folder, ignore_errors=True)
                raise RuntimeError(state.error) from e
            except BaseException:  # cancelled (the sample's timeout): the next one redoes it
                shutil.rmtree(folder, ignore_errors=True)
                raise
            final = (folder / "agentic" / "memory" / category.removeprefix("memory_")
                     / "memory_snapshot" / f"{scenario}_final.json")
            text = final.read_text(encoding="utf-8") if final.is_file() else "null"
            state.result = ChainResult(folder, json.loads(text),
                                       hashlib.sha256(text.encode()).hexdigest(), prereqs)
            return state.result, True
