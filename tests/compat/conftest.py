"""Make the GAIA fixture writers and the BFCL oracle helpers importable from the compat tests."""

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "tasks"
for folder in (BENCHMARKS / "gaia", BENCHMARKS / "bfcl"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
