"""The rubric the judge scores generated problems with, and how its verdicts are read.

Dimensions with five anchored levels each (Prometheus style); a missing dimension, a score outside
1-5, a fraction or a word is no verdict.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from assay.core.yamlsafe import YamlError, load_yaml
from assay.errors import ConfigError
from assay.scoring.judge import one_line_error, read_json

LEVELS = (1, 2, 3, 4, 5)


class Dimension(BaseModel):
    """One scored aspect with its five anchored levels (``levels[1]`` .. ``levels[5]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")
    description: str = Field(min_length=1)
    levels: dict[int, str]

    @field_validator("levels", mode="before")
    @classmethod
    def _levels(cls, v: Any) -> Any:
        if isinstance(v, list | tuple):
            if len(v) != 5:
                raise ValueError(f"needs 5 level descriptions (level 1 first), got {len(v)}")
            return {i + 1: s for i, s in enumerate(v)}
        if isinstance(v, dict):
            try:
                out = {int(k): s for k, s in v.items()}
            except (TypeError, ValueError):
                raise ValueError("level keys must be the integers 1 to 5") from None
            if sorted(out) != list(LEVELS):
                raise ValueError(f"levels must be exactly 1 to 5, got {sorted(out)}")
            return out
        raise ValueError("levels must be a mapping 1..5 -> description or a list of 5")

    @field_validator("levels")
    @classmethod
    def _non_empty(cls, v: dict[int, str]) -> dict[int, str]:
        for k, s in v.items():
            if not str(s).strip():
                raise ValueError(f"level {k} has an empty description")
        return dict(sorted(v.items()))


class Rubric(BaseModel):
    """A named, versioned list of dimensions (names unique)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "custom"
    version: str = "1"
    dimensions: list[Dimension] = Field(min_length=1)

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int | float) else v

    @field_validator("dimensions", mode="before")
    @classmethod
    def _dims(cls, v: Any) -> Any:
        if isinstance(v, dict):  # name: {description, levels}
            return [{"name": k, **(d if isinstance(d, dict) else {"description": d})}
                    for k, d in v.items()]
        return v

    @model_validator(mode="after")
    def _unique(self) -> Rubric:
        names = [d.name for d in self.dimensions]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate dimension names: {', '.join(dup)}")
        return self

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.dimensions]

    def content_hash(self) -> str:
        """SHA-256 of the rubric's canonical JSON (recorded with every run)."""
        raw = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(raw.encode()).hexdigest()

    def render(self) -> str:
        """The rubric as the judge reads it: each dimension with its anchored levels."""
        parts = []
        for d in self.dimensions:
            lines = [f"[{d.name}] {d.description}"]
            lines += [f"Score {k}: {d.levels[k]}" for k in LEVELS]
            parts.append("\n".join(lines))
        return "\n\n".join(parts)


def _dim(name: str, description: str, *levels: str) -> Dimension:
    return Dimension(name=name, description=description, levels=list(levels))


#: The four dimensions for AIME-style problems, each with anchored levels.
DEFAULT_RUBRIC = Rubric(
    name="aime-default",
    version="1",
    dimensions=[
        _dim(
            "correctness",
            "Is the problem mathematically sound, with exactly one answer, and are the stated "
            "answer and the solution right?",
            "Ill-posed, self-contradictory or unsolvable, or the stated answer is wrong.",
            "The stated answer is doubtful: the solution contains errors that change it, or the "
            "problem admits more than one reasonable answer.",
            "The stated answer appears right, but the solution has a real error or an unjustified "
            "leap, or the statement needs a charitable reading to have a unique answer.",
            "Well-posed with a unique answer, and the stated answer is right; the solution has a "
            "minor gap or imprecision that does not affect the answer.",
            "Well-posed with a unique integer answer from 0 to 999; the stated answer is right and "
            "every step of the solution is valid and justified.",
        ),
        _dim(
            "clarity",
            "Is the statement precise and unambiguous, in standard notation, so that a strong "
            "student knows exactly what is asked?",
            "Garbled or incomprehensible: what is being asked cannot be determined.",
            "Ambiguous: a condition or the requested quantity is vague, missing or conflicting, "
            "so different readers would solve different problems.",
            "Understandable, but some term, condition or the requested quantity needs rereading "
            "or guesswork to pin down.",
            "Clear and unambiguous, with slightly awkward wording or notation that causes no doubt "
            "about the question.",
            "Every object and condition is defined precisely and concisely in standard notation; "
            "one careful reading is enough to know exactly what to compute.",
        ),
        _dim(
            "difficulty_match",
            "Does the difficulty fit the AIME: several steps of insight beyond routine exercises, "
            "solvable by hand without a calculator by a strong high-school student?",
            "Nothing like an AIME problem: the answer is immediate, or it is intractable by hand.",
            "Clearly the wrong level: a one-step computation, or it needs university mathematics "
            "or brute-force computation no one would do by hand.",
            "Noticeably off: a routine textbook exercise with a small twist, or an olympiad proof "
            "problem forced into a numeric answer.",
            "Within the AIME range but at its edge: as easy as the first problems of a paper, or "
            "slightly harder than typical while still fair.",
            "Typical of the middle and late AIME problems: combines ideas through several "
            "insightful steps, fair and solvable by hand in about 10-20 minutes.",
        ),
        _dim(
            "completeness",
            "Does the item give everything needed: all givens in the statement, a single integer "
            "answer from 0 to 999, and a full solution?",
            "Fragmentary: the statement, the answer or the solution is missing or cut off.",
            "A needed given or constraint is missing from the statement, or the solution is "
            "mostly missing.",
            "The statement is complete, but the solution is a sketch missing key steps, or the "
            "requested answer form is unclear.",
            "Statement and answer are complete and the answer form is clear; the solution skips "
            "a routine step or two.",
            "All givens are stated, one integer answer from 0 to 999 is requested in a clear "
            "form (e.g. 'find m + n'), and the solution runs from start to final answer.",
        ),
    ],
)


def load_rubric(path: str | Path) -> Rubric:
    """A rubric from a YAML file; any problem is a one-line :class:`ConfigError`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"rubric file {p}: cannot be read ({e.strerror or e})") from e
    try:  # the one safe loader (alias, size and key limits), worded as rubric errors are
        data = load_yaml(text, p)
    except YamlError as e:
        where = f" at line {e.line}" if e.line else ""
        raise ConfigError(f"rubric file {p}: invalid YAML{where}: {e.problem}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"rubric file {p}: expected a mapping with 'dimensions', "
                          f"got {type(data).__name__}")
    try:
        return Rubric.model_validate({"name": p.stem, **data})
    except PydanticValidationError as e:
        raise ConfigError(f"rubric file {p}: {one_line_error(e)}") from e


def resolve_rubric(rubric: str | Path | Rubric | None) -> Rubric:
    """``None`` -> :data:`DEFAULT_RUBRIC`; a path -> :func:`load_rubric`; a rubric as is."""
    if rubric is None or rubric == "":
        return DEFAULT_RUBRIC
    if isinstance(rubric, Rubric):
        return rubric
    return load_rubric(rubric)


RATIONALE_MAX_LENGTH = 500


def rubric_schema(rubric: Rubric = DEFAULT_RUBRIC, *,
                  rationale_max_length: int | None = RATIONALE_MAX_LENGTH) -> dict[str, Any]:
    """JSON Schema of the judge's reply, small for constrained decoding (enums): the
    rationale first so the judge reasons before it scores, capped (``None``: no limit) so a
    rambling small model still reaches the scores within its token budget."""
    rationale: dict[str, Any] = {"type": "string"}
    if rationale_max_length:
        rationale["maxLength"] = int(rationale_max_length)
    scores = {"type": "object",
              "properties": {n: {"type": "integer", "enum": list(LEVELS)} for n in rubric.names},
              "required": rubric.names, "additionalProperties": False}
    return {"type": "object", "properties": {"rationale": rationale, "scores": scores},
            "required": ["rationale", "scores"], "additionalProperties": False}


def verdict_example(rubric: Rubric = DEFAULT_RUBRIC) -> str:
    """The reply shape shown to the judge (placeholders, not a valid verdict)."""
    scores = ", ".join(f'"{n}": <1-5>' for n in rubric.names)
    return '{"rationale": "<two or three sentences>", "scores": {' + scores + "}}"


def _coerce_level(v: Any) -> Any:
    """Accept 4, 4.0, "4" and {"score": 4, ...}; refuse booleans, fractions and words."""
    if isinstance(v, dict) and "score" in v:
        v = v["score"]
    if isinstance(v, bool):
        raise ValueError("a boolean is not a score")
    if isinstance(v, float):
        if not v.is_integer():
            raise ValueError(f"{v} is not a whole level")
        return int(v)
    if isinstance(v, str):
        s = v.strip()
        if not re.fullmatch(r"[+]?\d+", s):
            raise ValueError(f"{v!r} is not a level")
        return int(s)
    if isinstance(v, int):
        return v
    raise ValueError(f"{type(v).__name__} is not a level")


Level = Annotated[int, BeforeValidator(_coerce_level), Field(ge=1, le=5, strict=True)]


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    scores: dict[str, Level]
    rationale: Any = ""


_VERDICT = TypeAdapter(_Verdict)


def check_verdict(text: str | None, rubric: Rubric = DEFAULT_RUBRIC
                  ) -> tuple[dict[str, Any] | None, str | None]:
    """``({"scores", "rationale"}, None)`` for a valid reply (extra score keys dropped),
    else ``(None, why it is not one)``."""

    def build(obj: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        v = _VERDICT.validate_python(obj)
        missing = [n for n in rubric.names if n not in v.scores]
        if missing:
            return None, f"scores lack {', '.join(missing)}"
        rationale = v.rationale if isinstance(v.rationale, str) else json.dumps(v.rationale)
        return {"scores": {n: v.scores[n] for n in rubric.names}, "rationale": rationale}, None

    return read_json(text, build)


def parse_verdict(text: str | None, rubric: Rubric = DEFAULT_RUBRIC) -> dict[str, Any] | None:
    """The judge's verdict from its reply, or ``None`` when the reply is not a valid verdict."""
    return check_verdict(text, rubric)[0]
