"""Checks on numeric options: a one-line :class:`ConfigError` naming the flag, so ``--epochs 0``
or ``--temperature nan`` fails before anything runs (not hanging or reaching a server)."""

from __future__ import annotations

import importlib
import math
from typing import Any

from assay.errors import ConfigError


def check_number(flag: str, value: Any, *, minimum: float | None = None,
                 above: float | None = None, maximum: float | None = None,
                 integer: bool = False, optional: bool = True) -> None:
    """Refuse ``value`` unless a finite number within the bounds (``minimum`` inclusive,
    ``above`` exclusive); ``None`` passes when ``optional``."""
    if value is None:
        if optional:
            return
        raise ConfigError(f"{flag} is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{flag} must be {kind}, got {value!r}")
    if integer and not isinstance(value, int):
        raise ConfigError(f"{flag} must be an integer, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{flag} must be a finite number, got {value!r}")
    if minimum is not None and value < minimum:
        raise ConfigError(f"{flag} must be at least {minimum:g}, got {value!r}")
    if above is not None and value <= above:
        raise ConfigError(f"{flag} must be greater than {above:g}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ConfigError(f"{flag} must be at most {maximum:g}, got {value!r}")


def check_json_finite(flag: str, value: Any) -> None:
    """Refuse NaN or infinity anywhere inside ``value`` (they are not valid JSON)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{flag} must be a finite number, got {value!r}")
    if isinstance(value, dict):
        for k, v in value.items():
            check_json_finite(f"{flag} {k}", v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            check_json_finite(flag, v)


def require_module(module: str, what: str, package: str) -> Any:
    """Import ``module`` for ``what``, or a one-line ConfigError naming the package to install
    (tests/attack/test_fresh_machine.py checks each comes with the test extras)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ConfigError(f"{what} needs {package}: pip install {package}") from e
