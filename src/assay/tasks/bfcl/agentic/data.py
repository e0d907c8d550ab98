"""Agentic entries as the official harness loads them (``bfcl_eval/utils.py``, 2026.3.23).

Memory ids and prerequisites as ``process_memory_test_case`` (``utils.py:714-752``); web search
ids and ``initial_config`` (``utils.py:704-711,859-875``); answer-format system message and
function docs (``utils.py:755-801``); ground truth aligned by index, ids checked.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import DatasetError
from assay.tasks.bfcl.agentic.prompts import AGENTIC_FORMAT_PROMPT
from assay.tasks.bfcl.categories import MEMORY, WEB_SEARCH
from assay.tasks.bfcl.data import DataSource, read_jsonl
from assay.tasks.bfcl.multiturn.data import function_docs, require_file

__all__ = ["MEMORY_SCENARIOS", "AgenticData", "backend_class", "load_agentic"]

#: ``MEMORY_SCENARIO_NAME`` (constants/category_mapping.py:47)
MEMORY_SCENARIOS = ("student", "customer", "finance", "healthcare", "notetaker")


@dataclass
class AgenticData:
    """One agentic category: scored entries, ground truth by id, (memory) each scenario's
    prerequisite chain in order."""

    category: str
    entries: list[dict[str, Any]]
    ground_truth: dict[str, list[str]]
    files: list[Path]
    prereqs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def backend_class(category: str) -> str:
    """The simulator class of an agentic category (``MemoryAPI_kv``, ``WebSearchAPI``)."""
    if category in MEMORY:
        return f"MemoryAPI_{category.removeprefix('memory_')}"
    if category in WEB_SEARCH:
        return "WebSearchAPI"
    raise DatasetError(f"{category!r} is not a BFCL agentic category")


def _with_format_prompt(question: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    out = copy.deepcopy(question)
    out[0].insert(0, {"role": "system", "content": AGENTIC_FORMAT_PROMPT})
    return out


def _answers(source: DataSource, name: str, raw: list[dict[str, Any]], ids: list[str],
             files: list[Path]) -> dict[str, list[str]]:
    """Ground truth by (rewritten) id, aligned by index as the official runner aligns it."""
    apath = require_file(source.path / "possible_answer" / name, source)
    files.append(apath)
    answers = read_jsonl(apath)
    if len(answers) != len(raw):
        raise DatasetError(f"{apath}: {len(answers)} answers for {len(raw)} questions")
    for q, a in zip(raw, answers, strict=True):
        if q["id"] != a["id"]:
            raise DatasetError(f"{apath}: answer {a['id']!r} is where {q['id']!r} is expected")
    return {i: a["ground_truth"] for i, a in zip(ids, answers, strict=True)}


def _load_memory(source: DataSource, category: str) -> AgenticData:
    qpath = require_file(source.path / "BFCL_v4_memory.json", source)
    raw = read_jsonl(qpath)
    files = [qpath]
    cls = backend_class(category)
    functions = function_docs(source, cls, files)
    prereqs: dict[str, list[dict[str, Any]]] = {}
    for scenario in MEMORY_SCENARIOS:
        ppath = require_file(source.path / "memory_prereq_conversation"
                             / f"memory_{scenario}.json", source)
        files.append(ppath)
        chain: list[dict[str, Any]] = []
        for e in read_jsonl(ppath):
            chain.append({
                "id": e["id"].replace("memory", category),
                "question": e["question"], "scenario": e.get("scenario", scenario),
                "involved_classes": [cls], "function": functions,
                "depends_on": [p["id"] for p in chain]})
        prereqs[scenario] = chain
    entries = []
    for e in raw:
        scenario = e.get("scenario")
        if scenario not in prereqs:
            raise DatasetError(f"{qpath}: {e['id']} has an unknown memory scenario "
                               f"{scenario!r}")
        entries.append({
            "id": e["id"].replace("memory", category),
            "question": _with_format_prompt(e["question"]), "scenario": scenario,
            "involved_classes": [cls], "function": functions,
            "depends_on": [p["id"] for p in prereqs[scenario]]})
    gt = _answers(source, "BFCL_v4_memory.json", raw, [e["id"] for e in entries], files)
    return AgenticData(category, entries, gt, files, prereqs)


def _load_web_search(source: DataSource, category: str) -> AgenticData:
    qpath = require_file(source.path / "BFCL_v4_web_search.json", source)
    raw = read_jsonl(qpath)
    files = [qpath]
    cls = backend_class(category)
    functions = function_docs(source, cls, files)
    entries = []
    for e in raw:
        eid = e["id"].replace("web_search", category)
        entries.append({
            "id": eid, "question": _with_format_prompt(e["question"]),
            "involved_classes": [cls], "function": functions,
            "initial_config": {cls: {"show_snippet": "no_snippet" not in eid}}})
    gt = _answers(source, "BFCL_v4_web_search.json", raw, [e["id"] for e in entries], files)
    return AgenticData(category, entries, gt, files)


def load_agentic(source: DataSource, category: str) -> AgenticData:
    """A memory or web-search category as the official harness loads it (module docstring)."""
    if category in MEMORY:
        return _load_memory(source, category)
    if category in WEB_SEARCH:
        return _load_web_search(source, category)
    raise DatasetError(f"{category!r} is not a BFCL agentic category")
