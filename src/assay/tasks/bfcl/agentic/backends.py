"""The official agentic backends (``MemoryAPI_kv``, ``_vector``, ``_rec_sum``, ``WebSearchAPI``),
what each needs, and how they are made (classes from ``bfcl_eval`` unchanged). Memory's
``bfcl_eval.utils`` mkdirs under ``BFCL_PROJECT_ROOT`` on import; vector loads a model on import.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from assay.errors import ConfigError, DatasetError
from assay.store.sqlite import workspace_dir
from assay.tasks.bfcl.agentic.data import backend_class
from assay.tasks.bfcl.multiturn.sim import load_class

__all__ = ["SERPAPI_ENV", "check_requirements", "ensure_project_root", "load_backend",
           "memory_config", "new_instance", "serpapi_key"]

SERPAPI_ENV = "SERPAPI_API_KEY"
#: the modules each backend imports, and the extra that installs them
_PACKAGES: dict[str, tuple[tuple[str, ...], str]] = {
    "MemoryAPI_kv": (("overrides", "rank_bm25"), "bfcl-memory"),
    "MemoryAPI_rec_sum": (("overrides",), "bfcl-memory"),
    "MemoryAPI_vector": (("overrides", "sentence_transformers", "faiss"), "bfcl-vector"),
    "WebSearchAPI": (("html2text", "requests", "bs4", "serpapi"), "bfcl-web"),
}
#: module -> the PyPI distribution that provides it, where the names differ
_DISTRIBUTION = {"rank_bm25": "rank-bm25", "sentence_transformers": "sentence-transformers",
                 "faiss": "faiss-cpu", "bs4": "beautifulsoup4",
                 "serpapi": "google-search-results"}


def ensure_project_root() -> None:
    """Point an unset ``BFCL_PROJECT_ROOT`` at the workspace before ``bfcl_eval`` makes
    folders there on import (the default is beside the installed package)."""
    if os.environ.get("BFCL_PROJECT_ROOT"):
        return
    root = (workspace_dir() / "data" / "bfcl" / "project").resolve()
    root.mkdir(parents=True, exist_ok=True)
    os.environ["BFCL_PROJECT_ROOT"] = str(root)


def serpapi_key() -> str | None:
    """The SerpAPI key the official ``WebSearchAPI`` reads, if set."""
    return os.environ.get(SERPAPI_ENV) or None


def _missing(names: tuple[str, ...]) -> list[str]:
    out = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(name)
    return out


def check_requirements(category: str) -> None:
    """One :class:`ConfigError` line when ``category`` cannot run here (missing package,
    SerpAPI key or simulator sources); the vector backend is not imported (it loads a model)."""
    cls = backend_class(category)
    names, extra = _PACKAGES[cls]
    problems = []
    if cls == "WebSearchAPI" and not serpapi_key():
        problems.append(f"web_search needs a SerpAPI key: set {SERPAPI_ENV}")
    missing = _missing(names)
    if missing:
        listed = ", ".join(_DISTRIBUTION.get(m, m) for m in missing)
        noun = "package" if len(missing) == 1 else "packages"
        problems.append(f"BFCL {category} needs the {noun} {listed}: "
                        f"pip install 'assay[{extra}]'")
    if problems:
        raise ConfigError("; ".join(problems))
    if cls != "MemoryAPI_vector":
        try:
            load_backend(cls)
        except DatasetError as e:
            raise ConfigError(str(e)) from e


def load_backend(cls: str) -> type:
    """The official backend class (``BFCL_PROJECT_ROOT`` set first)."""
    ensure_project_root()
    return load_class(cls)


def new_instance(cls: str, config: dict[str, Any]) -> Any:
    """A fresh backend instance loaded as officially (``_load_scenario``; memory reads its
    snapshot here)."""
    inst = load_backend(cls)()
    inst._load_scenario(dict(config))
    return inst


def memory_config(folder: Path, scenario: str, test_id: str) -> dict[str, Any]:
    """The memory backend's ``initial_config`` slice
    (``populate_initial_settings_for_memory_test_cases``, ``utils.py:837-856``)."""
    return {"model_result_dir": folder, "scenario": scenario, "test_id": test_id,
            "test_category": test_id.rsplit("_", 1)[0]}
