"""BFCL v4 categories, groups, languages and how each is checked.

Facts from the official ``bfcl_eval/constants/category_mapping.py`` and
``eval_runner.py`` (see ``reference/bfcl.md`` §1, §4.2, §5, §7).
"""

from __future__ import annotations

import difflib
from typing import Literal

from assay.errors import ConfigError

Language = Literal["python", "java", "javascript"]

NON_LIVE = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel",
            "parallel_multiple", "irrelevance")
LIVE = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
        "live_irrelevance", "live_relevance")
SINGLE_TURN = NON_LIVE + LIVE
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
              "multi_turn_long_context")
MEMORY = ("memory_kv", "memory_vector", "memory_rec_sum")
WEB_SEARCH = ("web_search_base", "web_search_no_snippet")
AGENTIC = MEMORY + WEB_SEARCH
SUPPORTED = SINGLE_TURN + MULTI_TURN + AGENTIC
RELEVANCE = ("irrelevance", "live_irrelevance", "live_relevance")
AST = tuple(c for c in SINGLE_TURN if c not in RELEVANCE)

GROUPS: dict[str, tuple[str, ...]] = {
    "non_live": NON_LIVE,
    "live": LIVE,
    "ast": AST,
    "all_single_turn": SINGLE_TURN,
    "multi_turn": MULTI_TURN,
    "memory": MEMORY,
    "web_search": WEB_SEARCH,
    "agentic": AGENTIC,
    # every category the leaderboard's overall score weighs (the official "all_scoring")
    "all": SUPPORTED,
    "all_scoring": SUPPORTED,
}

NOT_YET_SUPPORTED = ("format_sensitivity",)

# Legacy (v1-v3) names the HelloAgents book uses, mapped to v4 categories.
ALIASES = {"simple": "simple_python", "java": "simple_java", "javascript": "simple_javascript",
           "relevance": "live_relevance"}


def language_of(category: str) -> Language:
    """Programming language of a category's function docs and answers."""
    if category == "simple_java":
        return "java"
    if category == "simple_javascript":
        return "javascript"
    return "python"


def result_group(category: str) -> str:
    """Folder of the official result layout (``result/<model>/<group>/``)."""
    if category in MULTI_TURN:
        return "multi_turn"
    if category in MEMORY:
        return f"agentic/memory/{category.removeprefix('memory_')}"
    if category in WEB_SEARCH:
        return "agentic"
    return "live" if category.startswith("live_") else "non_live"


def is_agentic(category: str) -> bool:
    """A memory or web-search category (scored on the final answer's text)."""
    return category in AGENTIC


def is_multi_turn(category: str) -> bool:
    """A multi-turn category (simulated APIs, several user turns, state checked)."""
    return category in MULTI_TURN


def is_relevance(category: str) -> bool:
    """Checked by relevance (does the output decode to a call?) rather than AST."""
    return category in RELEVANCE


def expand(selection: str | list[str] | tuple[str, ...]) -> list[str]:
    """Category names from a name, a group or a comma-separated list; unknown ones are errors."""
    items = selection.split(",") if isinstance(selection, str) else list(selection)
    out: list[str] = []
    for raw in items:
        name = ALIASES.get(raw.strip(), raw.strip())
        if not name:
            continue
        if name in GROUPS:
            out.extend(GROUPS[name])
        elif name in SUPPORTED:
            out.append(name)
        elif name in NOT_YET_SUPPORTED:
            raise ConfigError(
                f"BFCL category {name!r} is not supported yet (it is not part of the "
                "leaderboard's overall score); supported: every scoring category, or the "
                "groups non_live, live, ast, all_single_turn, multi_turn, memory, web_search, "
                "agentic, all"
            )
        else:
            known = [*SUPPORTED, *GROUPS, *ALIASES]
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            hint = f" (did you mean {ALIASES.get(close[0], close[0])!r}?)" if close else ""
            raise ConfigError(
                f"unknown BFCL category {name!r}{hint}; choose from {', '.join(SUPPORTED)} or "
                f"a group ({', '.join(g for g in GROUPS if g != 'all')})"
            )
    seen: set[str] = set()
    return [c for c in out if not (c in seen or seen.add(c))]

# Entries per category in the official v4 data (reference/bfcl.md §1); a category
# evaluated on fewer entries makes the official aggregates partial.
OFFICIAL_SIZES = {
    "simple_python": 400, "simple_java": 100, "simple_javascript": 50, "multiple": 200,
    "parallel": 200, "parallel_multiple": 200, "irrelevance": 240, "live_simple": 258,
    "live_multiple": 1053, "live_parallel": 16, "live_parallel_multiple": 24,
    "live_irrelevance": 884, "live_relevance": 16,
    "multi_turn_base": 200, "multi_turn_miss_func": 200, "multi_turn_miss_param": 200,
    "multi_turn_long_context": 200, "memory_kv": 155, "memory_vector": 155,
    "memory_rec_sum": 155, "web_search_base": 100, "web_search_no_snippet": 100,
}
