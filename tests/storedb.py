"""Reading a store's SQLite file directly, as a check from outside assay's own code."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """Every row ``sql`` selects from the database file ``db`` (its own connection)."""
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()
