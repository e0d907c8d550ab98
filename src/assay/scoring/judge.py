"""The one judge helper, so every judged task and the converse examiner behave the same:
**ask** one request (schema-constrained if given); a non-verdict gets ONE corrective retry
(clipped to :data:`RETRY_CLIP`, plus the task's ``{why}`` message), then the vote is *invalid*
(kept, never scored); **poll** each judge ``samples`` votes (one at the task's parameters, more
at temperature 0.7, seeds ``seed+i``); **combine** by ``majority`` (tie invalid, or the task's
``tie``) or ``mean``; ``agreement``: share of valid votes equal to the most common."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BeforeValidator, PlainSerializer, ValidationError

from assay.core.types import Message

T = TypeVar("T")

JUDGE_ROLE = "judge"
RETRY_CLIP = 2000  # characters of a refused reply shown back to the judge
SAMPLED_TEMPERATURE = 0.7  # of votes when ``samples`` > 1

_FENCE = re.compile(r"```[A-Za-z]*\s*\n?(.*?)```", re.S)
_WHOLE_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.S)
_MAX_SCAN = 64  # opening braces tried when the JSON is buried in prose


# -- the jury ---------------------------------------------------------------------------------

def jury_roles(models: Sequence[str]) -> list[tuple[str, str]]:
    """``[(role name, model)]``: ``judge`` for the first, ``judge_2``, ... after."""
    return [(JUDGE_ROLE if i == 0 else f"{JUDGE_ROLE}_{i + 1}", m) for i, m in enumerate(models)]


def jury_of(ctx: Any) -> list[Any]:
    roles = getattr(ctx, "roles", None) or {}
    out = []
    for name, _ in jury_roles([""] * len(roles)):
        if name not in roles:
            break
        out.append(roles[name])
    return out


def is_judge_role(name: str) -> bool:
    return name == JUDGE_ROLE or re.fullmatch(rf"{JUDGE_ROLE}_([2-9]|[1-9]\d+)", name) is not None


def as_models(value: Any) -> list[str]:
    """A ``judge_model`` option (one spec, a list, or none) as a list."""
    if value is None or value == "":
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def _stored(models: list[str]) -> str | list[str] | None:
    return models[0] if len(models) == 1 else (models or None)


#: every judged task's ``judge_model``: a spec or a jury, stored as before juries (or None)
JudgeModels = Annotated[list[str], BeforeValidator(as_models), PlainSerializer(_stored)]


def _no_credentials(url: str | None) -> str | None:
    if url and "@" in url.split("//", 1)[-1].split("/", 1)[0]:
        raise ValueError("put credentials in ASSAY_<ROLE>_API_KEY or OPENAI_API_KEY, not in "
                         "the URL (a run keeps its URLs, never the secrets in them)")
    return url


#: a role's endpoint option (``judge_base_url``): unset is its own default, not ``--base-url``
RoleURL = Annotated[str | None, AfterValidator(_no_credentials)]


# -- reading a reply --------------------------------------------------------------------------

def one_line_error(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__")
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    return f"{loc}: {msg}{more}" if loc else f"{msg}{more}"


def _candidates(text: str) -> list[Any]:
    """JSON values in a reply: fenced blocks, the whole text, then objects in prose."""
    found: list[Any] = []
    for block in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        block = block.strip()
        with contextlib.suppress(ValueError, RecursionError):
            found.append(json.loads(block))
            continue
        i, j = block.find("{"), block.rfind("}")
        if i != -1 and j > i:
            with contextlib.suppress(ValueError, RecursionError):
                found.append(json.loads(block[i:j + 1]))
    decoder = json.JSONDecoder()
    for n, m in enumerate(re.finditer(r"\{", text)):
        if n >= _MAX_SCAN:
            break
        try:
            found.append(decoder.raw_decode(text, m.start())[0])
        except (ValueError, RecursionError):
            continue
    return found


def _whole(text: str, fence: bool) -> tuple[list[Any], str | None]:
    raw = text.strip()
    fenced = _WHOLE_FENCE.match(raw) if fence else None
    if fenced:
        raw = fenced.group(1).strip()
    try:  # a raw line break inside a string is read (small local models write them)
        return [json.loads(raw, strict=False)], None
    except json.JSONDecodeError as e:
        return [], f"not JSON: {e.msg} at position {e.pos}"


def read_json(text: str | None, build: Callable[[dict[str, Any]], tuple[T | None, str | None]],
              *, strict: bool = False, fence: bool = True) -> tuple[T | None, str | None]:
    """The verdict in a JSON reply, or ``(None, why)``. ``build`` gives ``(value, None)`` or
    ``(None, why)`` for one object (a ``ValidationError`` becomes a one-line reason).
    ``strict``: the whole reply (its one code fence unwrapped with ``fence``) must be it;
    else the first object that validates among fences, the whole text and prose."""
    raw = text or ""
    if not raw.strip():
        return None, "empty reply"
    if strict:
        found, why = _whole(raw, fence)
        if why:
            return None, why
    else:
        found = _candidates(raw)
        if not found:
            return None, "no JSON object in the reply"
    first_error = None
    for obj in found:
        if not isinstance(obj, dict):
            first_error = first_error or f"a JSON {type(obj).__name__}, not an object"
            continue
        try:
            value, why = build(obj)
        except ValidationError as e:
            value, why = None, one_line_error(e)
        if value is not None:
            return value, None
        first_error = first_error or why
    return None, first_error


# -- asking -----------------------------------------------------------------------------------

@dataclass
class Vote:
    """One judge's vote: the verdict (``None``: invalid), its replies, why each refused
    one was refused, and the judge's model."""

    value: Any
    replies: list[str]
    refused: list[str] = field(default_factory=list)
    judge: str | None = None

    @property
    def invalid(self) -> bool:
        return self.value is None

    @property
    def attempts(self) -> int:
        return len(self.replies)


async def ask(judge: Any, messages: list[Message],
              parse: Callable[[str], tuple[Any, str | None]], *,
              retry: str | Callable[[str], str],
              schema: dict[str, Any] | None = None,
              params: dict[str, Any] | None = None) -> Vote:
    """One vote (see the module); ``retry`` is a text formatted with ``why``, or a function."""
    extra: dict[str, Any] = dict(params or {})
    if schema is not None:
        extra["response_schema"] = schema
    replies: list[str] = []
    refused: list[str] = []
    for attempt in range(2):
        reply = await judge.generate(messages, **extra)
        raw = reply.message.content or ""
        replies.append(raw)
        value, why = parse(raw)
        if value is not None:
            return Vote(value, replies, refused, getattr(judge, "model_id", None))
        refused.append(str(why))
        if attempt == 0:
            messages = [*messages, Message("assistant", raw[:RETRY_CLIP]),
                        Message("user", retry(str(why)) if callable(retry)
                                else retry.format(why=why))]
    return Vote(None, replies, refused, getattr(judge, "model_id", None))


def vote_params(params: dict[str, Any], samples: int, index: int,
                seed: Any = None) -> dict[str, Any]:
    if samples <= 1:
        return dict(params)
    return {**params, "temperature": SAMPLED_TEMPERATURE, "seed": int(seed or 0) + index}


async def poll(jury: Sequence[Any], messages: list[Message],
               parse: Callable[[str], tuple[Any, str | None]], *,
               retry: str | Callable[[str], str], schema: dict[str, Any] | None = None,
               params: dict[str, Any] | None = None,
               samples: int = 1, seed: Any = None) -> list[Vote]:
    """Every judge's ``samples`` votes on one request, judge by judge."""
    return list(await asyncio.gather(*(
        ask(judge, messages, parse, retry=retry, schema=schema,
            params=vote_params(params or {}, samples, i, seed))
        for judge in jury for i in range(samples))))


# -- combining --------------------------------------------------------------------------------

@dataclass
class Verdict:
    """Votes combined (see the module); ``value`` ``None`` is invalid."""

    value: Any
    valid: int
    invalid_votes: int
    agreement: float | None
    why: str = ""

    @property
    def invalid(self) -> bool:
        return self.value is None


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _mean(values: list[Any]) -> Any:
    if isinstance(values[0], dict):
        keys = [k for k in values[0] if all(k in v for v in values)]
        return {k: sum(float(v[k]) for v in values) / len(values) for k in keys}
    return sum(float(v) for v in values) / len(values)


def combine(values: Sequence[Any], *, rule: str = "majority", tie: Any = None) -> Verdict:
    """Votes (``None``: invalid) into one verdict by ``rule`` (see the module)."""
    valid = [v for v in values if v is not None]
    n_invalid = len(values) - len(valid)
    if not valid:
        return Verdict(None, 0, n_invalid, None, "no valid verdict")
    counts = Counter(_key(v) for v in valid)
    ranked = counts.most_common()
    agreement = ranked[0][1] / len(valid) if len(values) > 1 else None
    if rule == "mean":  # one valid vote is its own verdict, as it was given
        value = valid[0] if len(valid) == 1 else _mean(valid)
        return Verdict(value, len(valid), n_invalid, agreement)
    if rule != "majority":
        raise ValueError(f"unknown rule {rule!r}: 'majority' or 'mean'")
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        split = ", ".join(f"{n}x {k}" for k, n in ranked)
        if tie is None:
            return Verdict(None, len(valid), n_invalid, None, f"a tie ({split})")
        return Verdict(tie, len(valid), n_invalid, agreement, f"a tie ({split})")
    winner = next(v for v in valid if _key(v) == ranked[0][0])
    return Verdict(winner, len(valid), n_invalid, agreement)
