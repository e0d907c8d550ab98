"""Driving the real ``assay`` CLI in a subprocess, for the attack tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m assay ARGS`` with the test's workspace (ASSAY_HOME) and no colour."""
    full = dict(os.environ, COLUMNS="200", NO_COLOR="1")
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, env=full, cwd=cwd or REPO, timeout=timeout)


def one_line_error(p: subprocess.CompletedProcess[str], *needles: str) -> str:
    """rc 2, one stderr line starting ``error:`` holding every needle, no traceback."""
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("error: "), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def free_port() -> int:
    """A port nothing listens on (closed again before it is returned)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
