"""Which process owns a running run, and whether it is still alive."""

from __future__ import annotations

import os
import socket
from typing import Any

from assay.errors import ConfigError


def _process_start(pid: int) -> int | None:
    """When ``pid`` started (ticks since boot, from /proc), if known: a reused pid differs."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat.rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner() -> dict[str, Any]:
    info: dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid()}
    start = _process_start(os.getpid())
    if start is not None:
        info["start"] = start
    return info


def owner_alive(info: dict[str, Any] | None) -> bool | None:
    """Whether the process recorded in ``info`` still runs (``None``: cannot tell)."""
    if not info or info.get("host") != socket.gethostname() or not info.get("pid"):
        return None
    try:
        os.kill(int(info["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return None
    if info.get("start") is not None:
        start = _process_start(int(info["pid"]))
        if start is not None and start != info["start"]:
            return False  # the pid was reused by another process
    return True


def effective_status(status: str, stats: dict[str, Any]) -> str:
    """``running`` becomes ``interrupted`` when the owning process is known to be gone."""
    gone = status == "running" and owner_alive(stats.get("owner")) is False
    return "interrupted" if gone else status


def check_resumable(record: dict[str, Any], task: str, what: str) -> None:
    """Refuse to resume ``record`` as a ``task`` run when it is another task's, or when
    another process still runs it."""
    rid = record["id"]
    if record["task"] != task:
        raise ConfigError(f"run {rid} is a {record['task']} run, not a {what}; resume "
                          f"it with 'assay run {record['task']} --resume {rid}'")
    holder = record["stats"].get("owner") or {}
    if record["status"] == "running" and holder.get("pid") != os.getpid():
        raise ConfigError(f"{what} {rid} is still running (process {holder.get('pid')}); "
                          "stop it before resuming")
