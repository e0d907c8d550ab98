"""Agentic entries, prompts and backends equal what the official harness builds.

The oracle is the official loader itself (``bfcl_eval.utils.load_dataset_entry`` and
``load_ground_truth_entry``, which import light) and the official texts and prompt builder
(``constants/default_prompts.py``, ``model_handler/utils.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import official_agentic_oracle as oracle
import pytest

from assay.tasks.bfcl.agentic import prompts
from assay.tasks.bfcl.agentic.data import MEMORY_SCENARIOS, load_agentic
from assay.tasks.bfcl.data import copy_simulators, installed_package_dir, locate
from assay.tasks.bfcl.prompts import add_language_hints

#: scored entries and prerequisites per scenario in bfcl-eval 2026.3.23
QUESTIONS = {"student": 50, "customer": 30, "finance": 25, "healthcare": 25, "notetaker": 25}
PREREQS = {"student": 10, "customer": 10, "finance": 7, "healthcare": 5, "notetaker": 5}
KEYS = ("id", "question", "involved_classes", "function", "depends_on", "scenario",
        "initial_config")


def official_entries(category: str, **kw: Any) -> list[dict[str, Any]]:
    o = oracle.load()
    entries = o.load_dataset_entry(category, include_language_specific_hint=False, **kw)
    if category.startswith("web_search"):
        from bfcl_eval.utils import populate_initial_settings_for_web_search_test_cases

        entries = populate_initial_settings_for_web_search_test_cases(entries)
    return entries


def pick(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry[k] for k in KEYS if k in entry}


@pytest.mark.parametrize("category", ["memory_kv", "memory_vector", "memory_rec_sum",
                                      "web_search_base", "web_search_no_snippet"])
def test_entries_equal_the_official_loader(category: str) -> None:
    data = load_agentic(locate(), category)
    official = official_entries(category)
    ours = [pick(e) for e in data.entries]
    for chain in data.prereqs.values():
        ours.extend(pick(e) for e in chain)
    assert sorted(ours, key=lambda e: e["id"]) == sorted(
        (pick(e) for e in official), key=lambda e: e["id"])
    if category.startswith("memory"):
        backend = category.removeprefix("memory_")
        assert len(data.entries) == 155 and {s: len(c) for s, c in data.prereqs.items()} \
            == PREREQS
        for scenario, n in QUESTIONS.items():
            assert sum(e["scenario"] == scenario for e in data.entries) == n
        assert data.entries[0]["id"] == f"memory_{backend}_0-customer-0"
        assert data.prereqs["finance"][2]["id"] == f"memory_{backend}_prereq_17-finance-2"
        assert data.prereqs["finance"][2]["depends_on"] == [
            f"memory_{backend}_prereq_15-finance-0", f"memory_{backend}_prereq_16-finance-1"]
        # prerequisites carry no answer-format prompt; scored entries do, first
        assert all(e["question"][0][0]["role"] == "user"
                   for c in data.prereqs.values() for e in c)
    else:
        assert len(data.entries) == 100 and data.entries[7]["id"] == f"{category}_7"
        show = category == "web_search_base"
        assert {e["initial_config"]["WebSearchAPI"]["show_snippet"] for e in data.entries} \
            == {show}
    assert all(e["question"][0][0] == {"role": "system",
                                       "content": prompts.AGENTIC_FORMAT_PROMPT}
               for e in data.entries)
    # ground truth: the official file aligned by index with the scored entries
    o = oracle.load()
    scored = official_entries(category, include_prereq=False)
    truth = o.load_ground_truth_entry(category)
    assert data.ground_truth == {e["id"]: a["ground_truth"]
                                 for e, a in zip(scored, truth, strict=True)}


def test_hinted_functions_equal_the_official_ones() -> None:
    o = oracle.load()
    for category in ("memory_kv", "memory_rec_sum", "memory_vector", "web_search_base"):
        hinted = o.load_dataset_entry(category, include_prereq=False)[0]["function"]
        ours = load_agentic(locate(), category).entries[0]["function"]
        assert add_language_hints(ours, "python") == hinted


def test_texts_equal_the_official_constants() -> None:
    p = oracle.load().prompts
    assert prompts.AGENTIC_FORMAT_PROMPT == p.ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT
    assert prompts.MEMORY_AGENT_SETTINGS == p.MEMORY_AGENT_SETTINGS
    assert prompts.MEMORY_INSTRUCTION_CORE_ARCHIVAL == p.MEMORY_BACKEND_INSTRUCTION_CORE_ARCHIVAL
    assert prompts.MEMORY_INSTRUCTION_UNIFIED == p.MEMORY_BACKEND_INSTRUCTION_UNIFIED
    assert set(prompts.MEMORY_AGENT_SETTINGS) == set(MEMORY_SCENARIOS)


class Dump:
    def __init__(self, text: str) -> None:
        self.text = text

    def _dump_core_memory_to_context(self) -> str:
        return self.text


@pytest.mark.parametrize("category", ["memory_kv", "memory_vector", "memory_rec_sum"])
def test_memory_prompt_equals_the_official_builder(category: str) -> None:
    o = oracle.load()
    data = load_agentic(locate(), category)
    dump = json.dumps({"name": "Michael", "city": "Seattle"}, indent=4)
    for scenario in MEMORY_SCENARIOS:
        question = next(e for e in data.entries if e["scenario"] == scenario)["question"]
        prereq = data.prereqs[scenario][1]["question"]
        for q in (question, prereq):
            want = o.mhu.add_memory_instruction_system_prompt(
                json.loads(json.dumps(q)), category, scenario, Dump(dump))
            got = prompts.add_memory_instruction(q, category, scenario, dump)
            assert got == want
            assert q[0][0]["content"] != got[0][0]["content"]  # the input is left alone


def test_the_pulled_sources_import_the_memory_backends(tmp_path: Path) -> None:
    """``assay data pull bfcl`` keeps what the memory backends import (``SIM_FILES``): they
    import from that copy alone."""
    package = installed_package_dir()
    assert package is not None
    copy_simulators(package, tmp_path)
    code = tmp_path / "_code"
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import memory_kv, "
        "memory_rec_sum;"
        "import bfcl_eval.utils as u;"
        "assert all(m.__file__.startswith(sys.argv[1]) for m in (memory_kv, memory_rec_sum, u))")
    env = dict(os.environ, BFCL_PROJECT_ROOT=str(tmp_path / "root"))
    out = subprocess.run([sys.executable, "-c", script, str(code)], capture_output=True,
                         text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "root" / ".file_locks").is_dir()  # eval_config ran, in our root
