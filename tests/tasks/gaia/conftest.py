"""Make the GAIA fixture writers (``gaia_fixtures``) importable from the GAIA tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
