"""Workspace persistence (SQLite)."""

from assay.store.sqlite import Store, workspace_dir

__all__ = ["Store", "workspace_dir"]
