"""pytest fixtures for :class:`assay.testing.fake_server.FakeServer`; enable with
``pytest_plugins = ["assay.testing.pytest_plugin"]`` in the root ``conftest.py``."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from assay.testing.fake_server import FakeServer

__all__ = ["SubprocessServer", "fake_server", "fake_server_subprocess",
           "launch_subprocess_server"]

_SRC_DIR = str(Path(__file__).resolve().parents[2])


@dataclass
class SubprocessServer:
    base_url: str
    proc: subprocess.Popen[str]

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout``."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def launch_subprocess_server(*args: str, timeout: float = 20.0) -> SubprocessServer:
    """Launch ``python -m assay.testing.fake_server ARGS``; wait for its ``READY`` line."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_SRC_DIR, env.get("PYTHONPATH")]))
    cli = list(args) if "--port" in args else ["--port", "0", *args]
    stderr = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([sys.executable, "-m", "assay.testing.fake_server", *cli],
                            stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    first = line[0].strip() if line else ""
    if not first.startswith("READY "):
        proc.kill()
        proc.wait()
        stderr.seek(0)
        raise RuntimeError(f"fake server did not become ready: {first!r}\n{stderr.read()}")
    stderr.close()
    return SubprocessServer(base_url=first.split(" ", 1)[1], proc=proc)


def _stopped_after(make: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    made: list[Any] = []

    def factory(*args: Any, **kwargs: Any) -> Any:
        made.append(make(*args, **kwargs))
        return made[-1]

    yield factory
    for srv in made:
        srv.stop()


@pytest.fixture
def fake_server() -> Iterator[Callable[..., FakeServer]]:
    """``fake_server(**kwargs)`` starts a :class:`FakeServer` on a thread (stopped after)."""
    yield from _stopped_after(lambda **kwargs: FakeServer(**kwargs).start())


@pytest.fixture
def fake_server_subprocess() -> Iterator[Callable[..., SubprocessServer]]:
    """``fake_server_subprocess(*cli_args)`` launches a :class:`SubprocessServer` (killed
    after)."""
    yield from _stopped_after(launch_subprocess_server)
