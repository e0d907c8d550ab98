"""Verdicts for one BFCL entry: the official one and the labelled tolerant one."""

from __future__ import annotations

import json
from typing import Any

from assay.core.types import Score
from assay.tasks.bfcl.categories import is_relevance
from assay.tasks.bfcl.checker import Verdict, check_ast, check_relevance
from assay.tasks.bfcl.decode import DecodeError, decode_prompt, fc_result_entries
from assay.tasks.bfcl.decode_tolerant import decode_tolerant


def _decode_official(raw: Any, text: str, language: str, mode: str) -> tuple[bool, Any]:
    """Decode as the official handler of ``mode`` would: (decoded_ok, decoded)."""
    try:
        if mode == "fc":
            return True, fc_result_entries(raw)
        return True, decode_prompt(text, language)
    except DecodeError:
        return False, None


def _verdict(decoded_ok: bool, decoded: Any, *, functions: list[dict[str, Any]],
             ground_truth: Any, category: str, language: str, underscore_to_dot: bool) -> Any:
    if is_relevance(category):
        return check_relevance(decoded_ok, decoded, category=category)
    if not decoded_ok:
        return Verdict(False, "ast_decoder:decoder_failed", ("output could not be decoded",))
    return check_ast(functions, decoded, ground_truth, language=language, category=category,
                     underscore_to_dot=underscore_to_dot)


def _display(decoded_ok: bool, decoded: Any) -> str | None:
    return json.dumps(decoded, ensure_ascii=False, default=str) if decoded_ok else None


def score_entry(*, raw: Any, text: str, functions: list[dict[str, Any]], ground_truth: Any,
                category: str, language: str, mode: str, underscore_to_dot: bool,
                tolerant: bool = True) -> list[Score]:
    """``bfcl`` (official decoding and checker) and optionally ``bfcl_tolerant``; ``raw`` (the
    official result-file form) is kept in the score, so exports are written from the store."""
    ok, decoded = _decode_official(raw, text, language, mode)
    v = _verdict(ok, decoded, functions=functions, ground_truth=ground_truth, category=category,
                 language=language, underscore_to_dot=underscore_to_dot)
    scores = [Score(
        "bfcl", 1.0 if v.valid else 0.0, _display(ok, decoded),
        "correct" if v.valid else (v.error_type or "invalid"),
        {"error_type": None if v.valid else v.error_type, "errors": list(v.errors)[:5],
         "category": category, "mode": mode, "raw": raw},
    )]
    if tolerant:
        if ok and (mode == "fc" or v.valid):
            t_ok, t_decoded, method, tv = ok, decoded, "official", v
        else:
            t_decoded, method = decode_tolerant(text, language)
            t_ok = t_decoded is not None
            tv = _verdict(t_ok, t_decoded, functions=functions, ground_truth=ground_truth,
                          category=category, language=language,
                          underscore_to_dot=underscore_to_dot)
        scores.append(Score(
            "bfcl_tolerant", 1.0 if tv.valid else 0.0, _display(t_ok, t_decoded),
            "correct" if tv.valid else (tv.error_type or "invalid"),
            {"error_type": None if tv.valid else tv.error_type, "extraction": method},
        ))
    return scores
