"""The one judge helper: ask a model for a verdict, read it, retry once, vote, combine.

Every judged task (MT-Bench, converse points, the datagen rubric and win rate) and the
converse examiner go through it, so all of them behave the same:

* **ask** (:func:`ask`): one request, schema-constrained where the task gives a JSON
  Schema (``response_schema``); the reply is read by the task's ``parse`` (for JSON
  replies, :func:`read_json` is the one reader). A reply that is not a verdict gets ONE
  corrective retry: the conversation, the judge's reply (its first :data:`RETRY_CLIP`
  characters) and the task's corrective message with ``{why}`` filled in. A second
  refusal makes the vote *invalid*: kept with its replies and reasons, counted, never
  scored.
* **vote** (:func:`poll`): every judge of the jury gives ``samples`` votes. One vote is
  asked with the task's parameters as they are (its deterministic setting); several are
  sampled at temperature 0.7 with seeds ``seed + i``, so they can differ and their
  agreement means something.
* **combine** (:func:`combine`): ``majority`` (labels: the most common valid vote; a
  tie between the most common is *invalid*, or the task's ``tie`` value, e.g. win rate's
  ``"tie"``) or ``mean`` (numbers, or dicts of numbers key by key). No valid vote:
  invalid. ``agreement`` is the share of the valid votes equal to the most common one
  (``None`` with a single vote).
* **jury**: the judges are roles ``judge``, ``judge_2``, ``judge_3``, ... of the scoring
  context (:func:`jury_roles` names them for a task's ``roles()``, :func:`jury_of` reads
  them from ``ctx.roles``); their votes are pooled and combined by the same rule.

A judge is anything with ``async generate(messages, *, response_schema=None, **params)``
returning a reply whose ``message.content`` is the text: the engine's per-role context.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BeforeValidator, PlainSerializer, ValidationError

from assay.core.types import Message

T = TypeVar("T")

#: the first judge's role; the others are ``judge_2``, ``judge_3``, ...
JUDGE_ROLE = "judge"
#: characters of a refused reply shown back to the judge with the corrective message
RETRY_CLIP = 2000
#: the temperature of sampled votes (``samples`` > 1)
SAMPLED_TEMPERATURE = 0.7

_FENCE = re.compile(r"```[A-Za-z]*\s*\n?(.*?)```", re.S)
_WHOLE_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.S)
_MAX_SCAN = 64  # opening braces tried when the JSON is buried in prose


# -- the jury ---------------------------------------------------------------------------------

def jury_roles(models: Sequence[str]) -> list[tuple[str, str]]:
    """``[(role name, model)]`` for a jury: ``judge`` for the first, ``judge_2``, ... after."""
    return [(JUDGE_ROLE if i == 0 else f"{JUDGE_ROLE}_{i + 1}", m) for i, m in enumerate(models)]


def jury_of(ctx: Any) -> list[Any]:
    """The judges a scoring context offers, in jury order (``judge``, ``judge_2``, ...)."""
    roles = getattr(ctx, "roles", None) or {}
    out = []
    for name, _ in jury_roles([""] * len(roles)):
        if name not in roles:
            break
        out.append(roles[name])
    return out


def is_judge_role(name: str) -> bool:
    """Whether a role name is one of a jury's (``judge``, ``judge_2``, ...)."""
    return name == JUDGE_ROLE or re.fullmatch(rf"{JUDGE_ROLE}_([2-9]|[1-9]\d+)", name) is not None


def as_models(value: Any) -> list[str]:
    """A ``judge_model`` option as a list: one spec, a list of them, or none (``[]``)."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _stored(models: list[str]) -> str | list[str] | None:
    return models[0] if len(models) == 1 else (models or None)


#: the one shape of every judged task's ``judge_model`` option: one model spec or
#: several (a jury; ``--judge-model`` repeated, ``-T judge_model=M`` for one); stored as
#: it was before juries (one spec: a string; none: ``None``)
JudgeModels = Annotated[list[str], BeforeValidator(as_models), PlainSerializer(_stored)]


def _no_credentials(url: str | None) -> str | None:
    if url and "@" in url.split("//", 1)[-1].split("/", 1)[0]:
        raise ValueError("put credentials in ASSAY_<ROLE>_API_KEY or OPENAI_API_KEY, not in "
                         "the URL (a run keeps its URLs, never the secrets in them)")
    return url


#: the one shape of a role's endpoint option (``judge_base_url``, ``examiner_base_url``):
#: unset means the role's own environment or its provider's default, never the run's
#: ``--base-url`` (see :func:`assay.engine.judging.role_subject`)
RoleURL = Annotated[str | None, AfterValidator(_no_credentials)]


# -- reading a reply --------------------------------------------------------------------------

def one_line_error(e: ValidationError) -> str:
    """A pydantic error as one line: where, what (and how many more)."""
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
        try:
            found.append(json.loads(block))
            continue
        except (ValueError, RecursionError):
            pass
        i, j = block.find("{"), block.rfind("}")
        if i != -1 and j > i:
            try:
                found.append(json.loads(block[i:j + 1]))
            except (ValueError, RecursionError):
                pass
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
    """The verdict in a JSON reply, or ``(None, why)``: the one JSON-from-reply reader.

    ``build`` validates one object and returns ``(value, None)`` or ``(None, why)``
    (a pydantic error it raises becomes a one-line reason). ``strict``: the whole reply
    must be that object (``fence``: one Markdown code fence around it is unwrapped);
    otherwise the first object that validates among fenced blocks, the whole text and
    objects in prose.
    """
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
    """One judge's vote: the verdict (``None``: invalid), its replies (one, or two after
    a refused one), why each refused reply was refused, and the judge's model."""

    value: Any
    replies: list[str]
    refused: list[str] = field(default_factory=list)
    judge: str | None = None

    @property
    def invalid(self) -> bool:
        """No verdict after the corrective retry."""
        return self.value is None

    @property
    def attempts(self) -> int:
        """Requests made for this vote."""
        return len(self.replies)


async def ask(judge: Any, messages: list[Message],
              parse: Callable[[str], tuple[Any, str | None]], *,
              retry: str | Callable[[str], str],
              schema: dict[str, Any] | None = None,
              params: dict[str, Any] | None = None) -> Vote:
    """One vote: a request (``response_schema=schema`` when given), ``parse``d; a refused
    reply gets ONE corrective retry (``retry``: a text formatted with ``why``, or a
    function of ``why``)."""
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
    """Vote ``index``'s parameters: ``params`` for a single vote; sampled at
    :data:`SAMPLED_TEMPERATURE` with seed ``seed + index`` when there are several."""
    if samples <= 1:
        return dict(params)
    return {**params, "temperature": SAMPLED_TEMPERATURE, "seed": int(seed or 0) + index}


async def poll(jury: Sequence[Any], messages: list[Message],
               parse: Callable[[str], tuple[Any, str | None]], *,
               retry: str | Callable[[str], str], schema: dict[str, Any] | None = None,
               params: dict[str, Any] | None = None,
               samples: int = 1, seed: Any = None) -> list[Vote]:
    """Every judge's ``samples`` votes on one request (see the module), judge by judge."""
    return list(await asyncio.gather(*(
        ask(judge, messages, parse, retry=retry, schema=schema,
            params=vote_params(params or {}, samples, i, seed))
        for judge in jury for i in range(samples))))


# -- combining --------------------------------------------------------------------------------

@dataclass
class Verdict:
    """Votes combined: the value (``None``: invalid), the valid and invalid vote counts
    and the agreement (share of valid votes equal to the most common; ``None`` for one vote)."""

    value: Any
    valid: int
    invalid_votes: int
    agreement: float | None
    why: str = ""

    @property
    def invalid(self) -> bool:
        """No verdict: no valid vote, or a tie the rule does not resolve."""
        return self.value is None


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


def _mean(values: list[Any]) -> Any:
    if isinstance(values[0], dict):
        keys = [k for k in values[0] if all(k in v for v in values)]
        return {k: sum(float(v[k]) for v in values) / len(values) for k in keys}
    return sum(float(v) for v in values) / len(values)


def combine(values: Sequence[Any], *, rule: str = "majority", tie: Any = None) -> Verdict:
    """Votes (``None`` for an invalid one) into one verdict by ``rule`` (see the module)."""
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
