"""What every Hugging Face Hub caller here needs to know about the Hub, read at call time:
whether it is switched off, where it is, and whether a failure was the connection."""

from __future__ import annotations

import os


def truthy(value: str | None) -> bool:
    """An environment flag's value read as huggingface_hub reads it (1, ON, YES, TRUE)."""
    return (value or "").strip().upper() in ("1", "ON", "YES", "TRUE")


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is set: the variable now, or huggingface_hub's constant
    (which it read at import)."""
    if truthy(os.environ.get("HF_HUB_OFFLINE")):
        return True
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover - huggingface_hub is a dependency
        return True
    return bool(constants.HF_HUB_OFFLINE)


def hub_endpoint() -> str | None:
    """``HF_ENDPOINT`` read now (huggingface_hub reads it once, at import)."""
    return (os.environ.get("HF_ENDPOINT") or "").rstrip("/") or None


def is_connection_error(exc: BaseException) -> bool:
    """Connection trouble from the stdlib, requests or httpx, anywhere in the cause chain."""
    cur: BaseException | None = exc
    for _ in range(10):
        if cur is None:
            return False
        if isinstance(cur, (ConnectionError, TimeoutError)):
            return True
        names = {c.__name__ for c in type(cur).__mro__}
        if names & {"ConnectError", "ConnectTimeout", "TimeoutException", "NetworkError",
                    "OfflineModeIsEnabled", "LocalEntryNotFoundError", "ProxyError"}:
            return True
        cur = cur.__cause__ or cur.__context__
    return False
