"""Memory categories: the prerequisite chain of each scenario, run once, before its questions.

Officially (``_llm_response_generation.py:260-350``, ``utils.py:714-752``, 2026.3.23) the
prerequisite conversations of a scenario form a dependency chain in file order; each one
starts from the snapshot the previous one flushed (the first from empty), and only they
flush (``base_handler.py:371-376``): ``<model_result_dir>/agentic/memory/<backend>/
memory_snapshot/<scenario>_final.json`` (``memory_api_metaclass.py:25-76``). Every question
of the scenario waits for the whole chain, then starts from that final snapshot and flushes
nothing. Prerequisites are not scored.

Here (one engine run, samples concurrent):

- **Prerequisites are not samples.** The first question of a scenario to start runs the
  chain inside its own ``solve``, with its own agent (so the chain's calls, tokens and time
  count on that question, and its transcripts are kept in that question's outcome:
  ``metadata["memory"]["prereqs"]``, each prerequisite's raw replies in the official
  result-file form plus a per-turn log, and the final snapshot). Every other question of
  the scenario waits on the chain's lock and reuses the finished chain.
- **One chain per (category, scenario, model, epoch, mode)** and per event loop, behind an
  :class:`asyncio.Lock`; the chain is finished only when every prerequisite has run and
  flushed. A chain cut off (the sample's timeout cancelled it) is thrown away with its
  folder, and the next question waiting runs it again from the start. A chain that failed
  (a model call that never succeeded) fails every question of the scenario with that
  error, without retrying in this session.
- **Snapshots** live in a private folder of the task under ``<workspace>/tmp/`` (one
  subfolder per chain attempt), removed when the task is released. The official classes
  read and write them as they ship.
- **Resume** (``--resume``) builds a new task, so the chain of a scenario with unfinished
  questions runs again, inside the first of them to start. With the response cache on
  (the default) every call of the chain is answered from the cache, so the replay is
  free and rebuilds exactly the memory the finished questions saw; with ``--no-cache``
  the chain is asked again (a non-deterministic model may then build other memories).
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
    """A finished chain: the folder its snapshots are in, the final snapshot and the
    prerequisites' transcripts."""

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
