"""Reading a generation: a reply's JSON object (fenced or bare, tolerant of LaTeX backslashes
such as ``\\frac``, which JSON reads as a form feed) and its validation; failures are reasons
``code: detail`` (:func:`reason_code`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from assay.tasks.datagen.problem import ANSWER_KEYS, PROBLEM_KEYS, SOLUTION_KEYS

#: LaTeX commands whose first letter makes a valid JSON escape (\b \f \n \r \t), so that
#: ``"\frac"`` parses "successfully" as a form feed followed by "rac"
_LATEX_ESCAPE_LOOKALIKES = frozenset("""
    b bar barwedge bf bfseries big bigcap bigcirc bigcup bigg biggl biggr bigl bigodot
    bigoplus bigotimes bigr bigsqcup bigstar bigtriangledown bigtriangleup biguplus bigvee
    bigwedge binom blacksquare bmod boldsymbol bot bowtie box boxed breve bullet beta because
    between beth bmatrix
    f fbox flat forall frac frown
    n nabla natural ne nearrow neg negthinspace neq nexists ngeq ngtr ni nleftarrow nleq nless
    nmid noindent nolimits nonumber not notin nparallel nprec nsubseteq nsucc nsupseteq
    ntriangleleft
    nu nwarrow newline newcommand
    r rangle rbrace rbrack rceil rfloor rho right rightarrow rightharpoonup rightleftharpoons
    rm rmoust rtimes
    t tan tanh tau tbinom text textbf textit textrm textstyle texttt tfrac th therefore theta
    thicksim thinspace tilde times to top triangle triangledown triangleleft triangleq
    triangleright tt
""".split())
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)```", re.DOTALL)


def fix_latex_escapes(text: str) -> str:
    r"""Double the backslashes of LaTeX commands (``\frac``, ``\(``) that are not meant as
    JSON escapes (``\\``, ``\"``, ``\/``, ``\uXXXX``, ``\n`` before a non-command)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt in '\\"/':
            out.append(text[i:i + 2])
            i += 2
            continue
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6] or ""):
            out.append(text[i:i + 6])
            i += 6
            continue
        if nxt in "bfnrt":
            m = re.match(r"[A-Za-z]+", text[i + 1:])
            word = m.group(0) if m else nxt
            if word == nxt or word not in _LATEX_ESCAPE_LOOKALIKES:
                out.append(text[i:i + 2])  # a real JSON escape (\n before a word, ...)
                i += 2
                continue
        out.append("\\\\")
        i += 1
    return "".join(out)


def _decode_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The first JSON object in ``text`` (text before and after ignored), or an error."""
    decoder = json.JSONDecoder(strict=False)
    error = None
    first: dict[str, Any] | None = None
    starts = [m.start() for m in re.finditer(r"\{", text)][:25]
    for start in starts:
        for candidate in (fix_latex_escapes(text[start:]), text[start:]):
            try:
                obj, _ = decoder.raw_decode(candidate)
            except json.JSONDecodeError as e:
                error = error or f"{e.msg} at line {e.lineno} column {e.colno}"
                continue
            if isinstance(obj, dict):
                if _field(obj, PROBLEM_KEYS) is not None or _field(obj, ANSWER_KEYS) is not None:
                    return obj, None
                first = first or obj
            break
    if first is not None:
        return first, None
    return None, error or "no JSON object in the reply"


def parse_generation(text: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The JSON object of a reply (fenced or bare, LaTeX-tolerant), or failure reasons."""
    if not text or not text.strip():
        return None, ["empty_reply: the reply was empty"]
    candidates = [m.group(1) for m in _FENCE.finditer(text) if "{" in m.group(1)]
    candidates.append(text)
    first_error = None
    for cand in candidates:
        obj, err = _decode_object(cand)
        if obj is not None:
            return obj, []
        first_error = first_error or err
    return None, [f"not_json: {first_error}"]


def _field(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        if k in obj:
            return obj[k]
    lower = {str(k).lower(): v for k, v in obj.items()}
    for k in keys:
        if k.lower() in lower:
            return lower[k.lower()]
    return None


def normalize_text(text: str) -> str:
    """Words only, case-folded: how two statements are compared (copies, duplicates)."""
    return " ".join(re.findall(r"\w+", text.casefold()))


#: the placeholders of the prompt's JSON example (small models copy them back)
_TEMPLATE_TEXT = frozenset({normalize_text("Problem statement in English"),
                            normalize_text("Detailed solution steps in English")})


def validate_generation(obj: dict[str, Any], *, requested_topic: str | None = None,
                        reference_problem: str | None = None
                        ) -> tuple[dict[str, Any] | None, list[str]]:
    """``{problem, answer (int), solution, topic}``, or the reasons (``code: detail``)."""
    reasons: list[str] = []
    problem = _field(obj, PROBLEM_KEYS)
    if not isinstance(problem, str) or not problem.strip():
        reasons.append("missing_problem: no problem statement")
    answer_raw = _field(obj, ANSWER_KEYS)
    answer: int | None = None
    if answer_raw is None:
        reasons.append("answer_missing: no answer")
    elif isinstance(answer_raw, bool):
        reasons.append(f"answer_not_integer: {answer_raw!r}")
    elif isinstance(answer_raw, int):
        answer = answer_raw
    elif isinstance(answer_raw, float) and answer_raw.is_integer():
        answer = int(answer_raw)
    elif isinstance(answer_raw, str) and re.fullmatch(r"\s*\$?\s*-?\d+\s*\$?\s*", answer_raw):
        answer = int(answer_raw.strip().strip("$"))
    else:
        reasons.append(f"answer_not_integer: {str(answer_raw)[:40]!r}")
    if answer is not None and not 0 <= answer <= 999:
        reasons.append(f"answer_out_of_range: {answer} (must be 0-999)")
    solution = _field(obj, SOLUTION_KEYS)
    if not isinstance(solution, str) or not solution.strip():
        reasons.append("missing_solution: no solution")
    if (isinstance(problem, str) and reference_problem
            and normalize_text(problem) == normalize_text(reference_problem)):
        reasons.append("copied_reference: the problem is the reference example")
    if (isinstance(problem, str) and normalize_text(problem) in _TEMPLATE_TEXT) or (
            isinstance(solution, str) and normalize_text(solution) in _TEMPLATE_TEXT):
        reasons.append("template_echo: the reply repeats the prompt's JSON example")
    if reasons:
        return None, reasons
    topic = _field(obj, ("topic", "Topic", "category"))
    topic = topic.strip() if isinstance(topic, str) and topic.strip() else requested_topic
    return {"problem": problem.strip(), "answer": answer, "solution": solution.strip(),
            "topic": topic}, []


def reason_code(reason: str) -> str:
    """The code part of a failure reason (``answer_out_of_range: 1500 ...`` -> the code)."""
    return reason.split(":", 1)[0].strip()
