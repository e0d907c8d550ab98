"""Which columns of a Hub dataset are the question, answer and choices: rules first, then the
planner model (its reply accepted only if every value is an unused column); all recorded."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from typing import Any

QUESTION_NAMES = ("question", "problem", "prompt", "input", "query", "instruction", "text",
                  "question_stem", "question_text", "goal", "ctx", "sentence")
ANSWER_NAMES = ("answer", "target", "label", "output", "solution", "final_answer",
                "answerKey", "answer_idx", "correct_answer", "expected_answer", "gold",
                "ground_truth", "reference", "correct")
CHOICES_NAMES = ("choices", "options", "endings", "candidates", "choice_list", "mc_options")
REQUIRED = {"generate": ("question_key", "answer_key"),
            "multiple_choice": ("question_key", "answer_key", "choices_key")}
_WHAT = {"question_key": "the question put to the model",
         "answer_key": "the reference answer",
         "choices_key": "the list of answer options"}


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def match_column(columns: list[str], names: tuple[str, ...],
                 taken: Collection[str] = ()) -> str | None:
    """The first of ``names`` among ``columns`` (exact, then ignoring case, ``_``, ``-``)."""
    free = [c for c in columns if c not in taken]
    for n in names:
        if n in free:
            return n
    by_norm = {}
    for c in free:
        by_norm.setdefault(_norm(c), c)
    for n in names:
        if _norm(n) in by_norm:
            return by_norm[_norm(n)]
    return None


def _ask_prompt(dataset_id: str, missing: list[str], types: dict[str, tuple[str, bool]],
                example: dict[str, Any]) -> str:
    cols = "; ".join(f"{c} ({t})" for c, (t, _) in types.items())
    lines = [f"The Hugging Face dataset {dataset_id} will be used to evaluate a model on "
             "question answering. Its columns are: " + cols + "."]
    if example:
        shown = {k: (v if len(json.dumps(v, default=str)) <= 120
                     else str(v)[:117] + "...") for k, v in example.items()}
        lines.append("One row: " + json.dumps(shown, ensure_ascii=False, default=str))
    for k in missing:
        lines.append(f"Which column holds {_WHAT[k]}? Answer it as {k}.")
    lines.append("Reply with a JSON object whose values are column names from the list above.")
    return "\n".join(lines)


def _ask_schema(missing: list[str], columns: list[str]) -> dict[str, Any]:
    return {"type": "object",
            "properties": {k: {"type": "string", "enum": list(columns),
                               "description": f"the column holding {_WHAT[k]}"}
                           for k in missing},
            "required": list(missing), "additionalProperties": False}


def _check_reply(reply: Any, missing: list[str], columns: list[str], used: set[str]) -> str | None:
    """Why the planner's reply cannot be accepted (None: it can)."""
    if not isinstance(reply, dict):
        return "the planner gave no JSON object"
    picked: list[str] = []
    for k in missing:
        v = reply.get(k)
        if not isinstance(v, str) or v not in columns:
            return f"the planner's {k} {v!r} is not a column"
        if v in used or v in picked:
            return f"the planner's {k} {v!r} is already used for another key"
        picked.append(v)
    return None


def map_keys(res: Any, types: dict[str, tuple[str, bool]],
              example: dict[str, Any], ask: Callable[[str, dict], dict | None] | None) -> None:
    cols, reasons, fields = res.columns, res.reasons, res.fields
    shown = ", ".join(cols) or "none"
    q = match_column(cols, QUESTION_NAMES)
    a = match_column(cols, ANSWER_NAMES, {q} if q else set())
    c = match_column(cols, CHOICES_NAMES, {x for x in (q, a) if x})
    for key, col in (("question_key", q), ("answer_key", a)):
        if col:
            fields[key] = col
            reasons[key] = f"rule: {col!r} is a usual name for {_WHAT[key]}"
    if c and types[c][1]:
        res.eval_type = "multiple_choice"
        fields["choices_key"] = c
        reasons["choices_key"] = f"rule: {c!r} is a list column named like answer options"
        reasons["eval_type"] = f"multiple_choice: {c!r} holds a list of options"
    elif c:
        reasons["choices_key"] = f"{c!r} is named like answer options but is not a list"
        reasons["eval_type"] = f"generate: {c!r} is not a list of options"
    else:
        reasons["choices_key"] = ("no list column named " + ", ".join(CHOICES_NAMES[:4]) +
                                  " or the like")
        reasons["eval_type"] = "generate: no column of answer options"
    missing = [k for k in REQUIRED[res.eval_type] if k not in fields]
    problem = None
    if missing and ask is not None and cols:
        prompt = _ask_prompt(res.id, missing, types, example)
        schema = _ask_schema(missing, cols)
        try:
            reply = ask(prompt, schema)
            why = _check_reply(reply, missing, cols, set(fields.values()))
        except Exception as e:  # a failed planner call leaves the keys unmapped
            reply, why = None, f"the planner call failed ({type(e).__name__})"
        res.model_calls.append({"prompt": prompt, "reply": reply, "accepted": why is None,
                                "problem": why})
        if why is None and isinstance(reply, dict):
            for k in missing:
                fields[k] = reply[k]
                reasons[k] = (f"the planner chose {reply[k]!r} (no column has a usual name "
                              f"for {_WHAT[k]})")
        else:
            for k in missing:
                reasons[k] = f"not mapped: {why}"
            problem = why
    missing = [k for k in REQUIRED[res.eval_type] if fields.get(k) not in cols]
    for k in missing:
        reasons.setdefault(k, f"no column has a usual name for {_WHAT[k]}")
    res.ok = not missing
    if missing:
        keys = ", ".join(missing)
        res.problem = (f"dataset {res.id}: no column for {keys}"
                       + (f" ({problem})" if problem else "")
                       + f"; columns: {shown}; set {keys} in the plan's task options")
