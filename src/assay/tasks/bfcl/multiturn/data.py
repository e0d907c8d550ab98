"""Multi-turn entries as the official harness loads them (``bfcl_eval/utils.py``,
``populate_test_cases_with_predefined_functions``): the docs of the involved classes in
order, each file in line order; for ``miss_func`` the withheld docs are taken out and kept
per turn (``missed_function``: turn index -> docs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.errors import DatasetError
from assay.tasks.bfcl.data import CategoryData, DataSource, read_jsonl

__all__ = ["FUNC_DOC_FILES", "function_docs", "load_multi_turn", "require_file"]

#: class -> its doc file (``MULTI_TURN_FUNC_DOC_FILE_MAPPING``)
FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json", "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json", "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json", "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json", "VehicleControlAPI": "vehicle_control.json",
    "WebSearchAPI": "web_search.json", "MemoryAPI_kv": "memory_kv.json",
    "MemoryAPI_vector": "memory_vector.json", "MemoryAPI_rec_sum": "memory_rec_sum.json",
}


def require_file(path: Path, source: DataSource) -> Path:
    """``path``, or a one-line error naming it and how to get a complete data folder."""
    if not path.is_file():
        raise DatasetError(f"{path} is missing; is {source.path} a complete BFCL v4 data "
                           "folder? ('assay data pull bfcl --force')")
    return path


def function_docs(source: DataSource, cls: str, files: list[Path],
                  cache: dict[str, list[dict[str, Any]]] | None = None
                  ) -> list[dict[str, Any]]:
    """The function docs of simulator class ``cls`` (``data/multi_turn_func_doc/``), in file
    order; the file read is added to ``files`` once (``cache`` keeps what was read)."""
    cache = {} if cache is None else cache
    if cls not in cache:
        name = FUNC_DOC_FILES.get(cls)
        if name is None:
            raise DatasetError(f"unknown BFCL class {cls!r} in the data")
        path = require_file(source.path / "multi_turn_func_doc" / name, source)
        cache[cls] = read_jsonl(path)
        files.append(path)
    return cache[cls]


def load_multi_turn(source: DataSource, category: str) -> CategoryData:
    """One multi-turn category: entries with ``function`` (and ``missed_function``) filled
    in, ground truth by id."""
    qpath = require_file(source.path / f"BFCL_v4_{category}.json", source)
    apath = require_file(source.path / "possible_answer" / f"BFCL_v4_{category}.json", source)
    entries = read_jsonl(qpath)
    gt = {a["id"]: a["ground_truth"] for a in read_jsonl(apath)}
    files = [qpath, apath]
    cache: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        if e["id"] not in gt:
            raise DatasetError(f"{apath}: no ground truth for {e['id']}")
        functions = [dict(d) for cls in e["involved_classes"]
                     for d in function_docs(source, cls, files, cache)]
        missed: dict[str, list[dict[str, Any]]] = {}
        for turn, names in (e.get("missed_function") or {}).items():
            missed[str(turn)] = []
            for name in names:
                i = next((k for k, d in enumerate(functions) if d["name"] == name), None)
                if i is None:
                    raise DatasetError(f"{qpath}: {e['id']} withholds {name!r}, which none of "
                                       "its classes has")
                missed[str(turn)].append(functions.pop(i))
        e["function"] = functions
        e["missed_function"] = missed
    return CategoryData(category, entries, gt, files)
