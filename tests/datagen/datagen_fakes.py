"""A scripted provider for the datagen pipeline tests: one endpoint that plays the
generator, the rubric judge, the pairwise judge and the solver, deterministically."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from assay.tasks.datagen.problem import Problem

REFERENCE = [Problem(f"ref-{i}", f"Reference problem {i}: find the remainder when {i}^2 + 7 "
                     "is divided by 11.", str((i * i + 7) % 11), source="reference:test")
             for i in range(6)]


def role(body: dict[str, Any]) -> str:
    """Which step sent a request: ``generate``, ``judge``, ``winrate`` or ``solve``."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    props = schema.get("properties") or {}
    if "problem" in props:
        return "generate"
    if "scores" in props:
        return "judge"
    if "winner" in props:
        return "winrate"
    return "solve"


def scripted(body: dict[str, Any]) -> Any:
    """The reply for one request (the same request always gets the same reply)."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    props = schema.get("properties") or {}
    text = body["messages"][-1]["content"]
    kind = role(body)
    if kind == "generate":
        # a bound drawn from the whole prompt, so two different prompts give two different
        # problems (a prompt's length alone collided: two identical problems made a test that
        # looks for a problem's text in a request flaky)
        n = int(hashlib.sha256(text.encode()).hexdigest(), 16) % 2000  # answers stay < 1000
        return json.dumps({"problem": f"GENERATED: how many integers k with 1 <= k <= {n + 100} "
                           "are multiples of 3?", "answer": (n + 100) // 3,
                           "solution": "Count the multiples of three.", "topic": "Number Theory"})
    if kind == "judge":
        dims = list(props["scores"].get("properties") or {})
        return json.dumps({"rationale": "clear and correct",
                           "scores": {d: 4 for d in dims}})
    if kind == "winrate":  # prefers the generated problem wherever it is
        first = text.split("[Problem 2]")[0]
        return json.dumps({"reason": "more interesting",
                           "winner": "1" if "GENERATED" in first else "2"})
    m = re.search(r"1 <= k <= (\d+)", text)  # solver
    return f"\\boxed{{{int(m.group(1)) // 3 if m else 0}}}"


def request_key(body: dict[str, Any]) -> str:
    """One request as comparable text (model, messages, parameters)."""
    return json.dumps(body, sort_keys=True)
