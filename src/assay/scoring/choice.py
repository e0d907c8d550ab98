"""The multiple-choice scorer: the option a model picked, by letter or by text; and the
lettered options as a prompt shows them."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any

from assay.core.types import Score
from assay.scoring.extraction import clean_answer, extract_answer
from assay.scoring.normalize import normalize_text
from assay.scoring.targets import nothing_extracted, short_repr, target_list, target_text

__all__ = ["LETTERS", "choice_target_index", "format_choices", "score_choice", "target_letters"]

LETTERS = string.ascii_uppercase  # at most 26 choices
_CHOICE_WHOLE = re.compile(r"[(\[]?([A-Za-z])[)\].:]?")
_CHOICE_KEYWORD = re.compile(
    r"(?:answer|option|choice)[ \t]*(?:is|:)?[ \t]*(?:\*\*)?[ \t]*[(\[]?([A-Z])(?![\w])",
    re.IGNORECASE)
_CHOICE_LEADING = re.compile(r"[(\[]?([A-Z])[)\].:](?:\s|$)")
_CHOICE_BRACKETED = re.compile(r"[(\[]([A-Za-z])[)\]]")
#: a line that starts with an option's letter, as a list of the options does
_OPTION_LINE = re.compile(r"^[ \t]*[(\[]?([A-Z])[)\].:][ \t]+\S", re.MULTILINE)
_CHOICE_STANDALONE = re.compile(r"(?<![\w'\u2019])([A-Z])(?![\w'\u2019])")


def _letter_index(letter: str, n: int) -> int | None:
    i = ord(letter.upper()) - 65
    return i if 0 <= i < n else None


def choice_target_index(t: Any, choices: Sequence[str]) -> int:
    """The 0-based index a target names: a letter, an int index, or a choice text."""
    n = len(choices)
    if isinstance(t, bool):
        raise ValueError(f"choice target must be a letter, index or choice text, got {t!r}")
    if isinstance(t, int):
        if 0 <= t < n:
            return t
        raise ValueError(f"choice target index {t} is out of range for {n} choices")
    s = target_text(t).strip()
    m = _CHOICE_WHOLE.fullmatch(s)
    if m and m.group(1).isupper() and (i := _letter_index(m.group(1), n)) is not None:
        return i
    norm = normalize_text(s)
    for i, c in enumerate(choices):
        if normalize_text(c) == norm:
            return i
    if m and (i := _letter_index(m.group(1), n)) is not None:
        return i
    if s.isdigit() and int(s) < n:
        return int(s)
    raise ValueError(
        f"choice target {short_repr(s)} is not a letter A-{LETTERS[n - 1]}, a 0-based index "
        "or the text of one of the choices")


def target_letters(target: Any, choices: Any) -> str | None:
    """A multiple-choice target as the letter the prompt asks for (``"A"``; a list of
    targets ``"A, C"``), shown beside the model's letter; ``None`` when it names no option
    or ``choices`` (as a sample's metadata holds them) is no list of options."""
    if not isinstance(choices, list) or not choices:
        return None
    try:
        return ", ".join(LETTERS[choice_target_index(t, choices)] for t in target_list(target))
    except (ValueError, IndexError):
        return None


def _predict_choice(answer: str, choices: Sequence[str]) -> tuple[int | None, str]:
    n = len(choices)
    s = clean_answer(answer)
    m = _CHOICE_WHOLE.fullmatch(s)
    if m and (i := _letter_index(m.group(1), n)) is not None:
        return i, "letter"
    for m in reversed(list(_CHOICE_KEYWORD.finditer(s))):
        if m.group(1).isupper() and (i := _letter_index(m.group(1), n)) is not None:
            return i, "letter"
    if len({m.group(1) for m in _OPTION_LINE.finditer(s)}) > 1:
        # the reply lists options ("A. x" / "B. y" ...): it chose none of them, and its
        # first line is not an answer (else echoing the options would score as A)
        return None, "listing"
    m = _CHOICE_LEADING.match(s)
    if m and (i := _letter_index(m.group(1), n)) is not None:
        return i, "letter"
    for m in reversed(list(_CHOICE_BRACKETED.finditer(s))):
        if (i := _letter_index(m.group(1), n)) is not None:
            return i, "letter"
    norm = normalize_text(s)
    if norm:
        for i, c in enumerate(choices):
            if normalize_text(c) == norm:
                return i, "text"
    for m in reversed(list(_CHOICE_STANDALONE.finditer(s))):
        if (i := _letter_index(m.group(1), n)) is not None:
            return i, "letter"
    return None, "none"


def score_choice(output: str, target: Any, *, choices: Sequence[str] | None = None,
                 **opts: Any) -> Score:
    """The predicted option (lettered A, B, ...) is the target's: a letter, a 0-based index
    or a choice text. Predicted, in order: the answer as a letter (``(B)``, ``B.``); a
    letter after answer/option/choice; a leading ``B)``; a bracketed ``(B)``; a choice's
    text; the last standalone capital in range. Extraction ``option``: no marker, but an
    option read from the reply. ``ValueError`` for no or over 26 choices, or a bad target."""
    if not choices:
        raise ValueError("the choice scorer needs the sample's `choices`")
    n = len(choices)
    if n > len(LETTERS):
        raise ValueError(f"at most {len(LETTERS)} choices are supported, got {n}")
    indices = [choice_target_index(t, choices) for t in target_list(target)]
    meta_target: int | list[int] = indices if isinstance(target, (list, tuple)) else indices[0]

    answer, method = extract_answer(output)
    if answer is None:
        return nothing_extracted("choice_accuracy", method, predicted_index=None,
                                 target_index=meta_target, match="none")
    idx, how = _predict_choice(answer, choices)
    if method == "full" and idx is not None:  # an option read from the reply, not the reply
        method = "option"
    meta = {"extraction": method, "predicted_index": idx, "target_index": meta_target,
            "match": how}
    gold = LETTERS[indices[0]]
    if idx is None:
        why = ("the output lists several options and names none as its answer"
               if how == "listing" else f"no option A-{LETTERS[n - 1]} found")
        return Score("choice_accuracy", 0.0, None, f"nothing extracted from the output ({why})",
                     meta)
    letter = LETTERS[idx]
    if idx in indices:
        return Score("choice_accuracy", 1.0, letter, f"{letter} is correct", meta)
    return Score("choice_accuracy", 0.0, letter, f"{letter} != {gold}", meta)


def format_choices(question: str, choices: Sequence[str]) -> str:
    """The question, then ``A. choice`` lines, then the instruction to answer with a letter."""
    if len(choices) > len(LETTERS):
        raise ValueError(f"at most {len(LETTERS)} choices are supported, got {len(choices)}")
    lines = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))
    return f"{question.rstrip()}\n\n{lines}\n\nAnswer with the letter of the correct option."
