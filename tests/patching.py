"""Replacing a function for a test wherever assay bound it.

A module imports what it uses at its top (``from assay.tasks.registry import task_class``),
so replacing ``registry.task_class`` alone would miss the modules holding their own name for
it; a guard such as "no reader calls task code" must see every call.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest


def patch_everywhere(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str,
                     replacement: Any) -> int:
    """Set ``owner.name`` and every loaded ``assay`` module's binding of the same object to
    ``replacement``; returns how many modules held it besides ``owner``."""
    original = getattr(owner, name)
    monkeypatch.setattr(owner, name, replacement)
    others = 0
    for mod_name, module in list(sys.modules.items()):
        if not mod_name.startswith("assay") or module is owner or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                monkeypatch.setattr(module, attr, replacement)
                others += 1
    return others
