"""The ``math`` scorer: equivalence checked by math-verify (slow to import: on first use)."""

from __future__ import annotations

import inspect
import logging
from typing import Any

from assay.core.types import Score
from assay.errors import ConfigError
from assay.scoring.extraction import strip_reasoning
from assay.scoring.targets import nothing_extracted, short_repr, target_list, target_text

__all__ = ["score_math"]

_MATH: dict[str, Any] = {}


class _NoTimeoutWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Timeout is disabled")


def _math_verify() -> dict[str, Any]:
    """parse/verify, and the kwargs that disable their signal timeouts."""
    if not _MATH:
        try:
            from math_verify import parse, verify  # heavy
        except ImportError as e:  # pragma: no cover - math-verify is a dependency
            raise ConfigError(
                "the math scorer needs math-verify: pip install 'math-verify[antlr4_13_2]'"
            ) from e
        for name in ("math_verify.parser", "math_verify.grader", "math_verify.utils"):
            logging.getLogger(name).addFilter(_NoTimeoutWarning())
        p_params = inspect.signature(parse).parameters
        v_params = inspect.signature(verify).parameters
        _MATH.update(parse=parse, verify=verify,
                     parse_kw={"parsing_timeout": None} if "parsing_timeout" in p_params else {},
                     verify_kw={"timeout_seconds": None} if "timeout_seconds" in v_params else {})
    return _MATH


def score_math(output: str, target: Any, **opts: Any) -> Score:
    """``verify(parse(target), parse(output))``, the target wrapped in ``$...$`` unless it
    has ``$`` or ``\\boxed``, reasoning removed from the output. Signal timeouts are off (so
    it works in worker threads); a math-verify error scores 0.0, explained."""
    targets = [target_text(t).strip() for t in target_list(target)]
    mv = _math_verify()
    parse, verify = mv["parse"], mv["verify"]
    text = strip_reasoning(output) if output else ""
    if not text.strip():
        return nothing_extracted("math_verify", "none")
    try:
        pred = parse(text, **mv["parse_kw"])
    except Exception as e:  # math-verify can raise on odd LaTeX
        return Score("math_verify", 0.0, None, f"math-verify failed on the output: {e}"[:200],
                     {"extraction": "none", "error": type(e).__name__})
    if not pred:
        return nothing_extracted("math_verify", "none")
    answer = next((p for p in pred if isinstance(p, str)), None) or str(pred[0])
    meta: dict[str, Any] = {"extraction": "math_verify"}
    try:
        for t in targets:
            gold_text = t if ("$" in t or "\\boxed" in t) else f"${t}$"
            gold = parse(gold_text, **mv["parse_kw"])
            if not gold:
                continue
            if verify(gold, pred, **mv["verify_kw"]):
                return Score("math_verify", 1.0, answer,
                             f"{short_repr(answer)} is equivalent to {short_repr(t)}", meta)
    except Exception as e:
        meta["error"] = type(e).__name__
        return Score("math_verify", 0.0, answer, f"math-verify failed: {e}"[:200], meta)
    return Score("math_verify", 0.0, answer,
                 f"{short_repr(answer)} is not equivalent to {short_repr(targets[0])}", meta)
