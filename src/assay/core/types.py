"""Plain dataclasses for the data path: light (``slots=True``, no validation), built once
per sample; outside data is validated where it enters, not here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

#: one encoder for every stored value (``json.dumps`` with options builds one per call)
_encode = json.JSONEncoder(ensure_ascii=False, default=str).encode


@dataclass(slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.id is not None:
            d["id"] = self.id
        return d


@dataclass(slots=True)
class ToolSpec:
    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})

    def to_openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}


@dataclass(slots=True)
class Message:
    """A chat message. ``tool_calls`` on assistant turns, ``tool_call_id`` on tool results."""

    role: str
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    #: a reasoning model's thinking (kept in the transcript, never scored or sent back)
    reasoning: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (also the cache-key form)."""
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [tc.to_dict() for tc in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.reasoning is not None:
            d["reasoning"] = self.reasoning
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        calls = [ToolCall(c["name"], c.get("arguments") or {}, c.get("id"))
                 for c in d.get("tool_calls") or []]
        return cls(role=d["role"], content=d.get("content"), tool_calls=calls or None,
                   tool_call_id=d.get("tool_call_id"), reasoning=d.get("reasoning"))


@dataclass(slots=True)
class Usage:
    """Tokens as the provider counts them: ``cached_input_tokens`` are part of
    ``input_tokens``, ``reasoning_tokens`` of ``output_tokens``; ``None``: not reported."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        if other.cached_input_tokens is not None:
            self.cached_input_tokens = (self.cached_input_tokens or 0) + other.cached_input_tokens
        if other.reasoning_tokens is not None:
            self.reasoning_tokens = (self.reasoning_tokens or 0) + other.reasoning_tokens

    def to_list(self) -> list[int | None]:
        return [self.input_tokens, self.output_tokens, self.cached_input_tokens,
                self.reasoning_tokens]

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(slots=True)
class Reply:
    message: Message
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    cached: bool = False
    #: why the model stopped, as it says (``stop``, ``length``, ``tool_calls``); None: unsaid
    finish_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as stored in the response cache."""
        d = {"message": self.message.to_dict(), "usage": self.usage.to_list(),
             "latency_s": self.latency_s}
        if self.finish_reason is not None:
            d["finish_reason"] = self.finish_reason
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reply:
        u = [*(d.get("usage") or [0, 0]), None, None]
        return cls(Message.from_dict(d["message"]), Usage(u[0], u[1], u[2], u[3]),
                   d.get("latency_s", 0.0), finish_reason=d.get("finish_reason"))


@dataclass(frozen=True, slots=True)
class Continuation:
    """A log-likelihood request: how likely ``continuation`` is after ``context`` (an empty
    context scores it after the end-of-text token, as lm-eval does)."""

    context: str
    continuation: str


@dataclass(slots=True)
class Likelihood:
    """A log-likelihood answer: the continuation's summed log-probability, whether greedy
    decoding would have produced it, the continuation's tokens and all tokens evaluated."""

    logprob: float
    greedy: bool
    tokens: int
    input_tokens: int = 0

    def to_list(self) -> list[Any]:
        return [self.logprob, self.greedy, self.tokens, self.input_tokens]

    @classmethod
    def from_list(cls, d: list[Any]) -> Likelihood:
        return cls(float(d[0]), bool(d[1]), int(d[2]), int(d[3]))


@dataclass(slots=True)
class Sample:
    """One evaluation item, carrying everything its scoring needs (all of it stored):
    ``input`` a prompt or message list, ``row`` the original dataset row."""

    id: str
    input: str | list[Message]
    target: Any = None
    tools: list[ToolSpec] | None = None
    files: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    row: dict[str, Any] | None = None

    def input_json(self) -> Any:
        if isinstance(self.input, str):
            return self.input
        return [m.to_dict() for m in self.input]


@dataclass(slots=True)
class Outcome:
    transcript: list[Message] = field(default_factory=list)
    output: str = ""
    tool_calls: list[ToolCall] | None = None
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    latency_s: float = 0.0
    model_calls: int = 0
    cache_hits: int = 0
    #: what ``solve`` wants ``score`` to know (e.g. how the agent was driven)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Score:
    """A scorer's verdict: ``value`` 1.0/0.0 (or graded), ``None`` when the sample cannot be
    scored; ``answer`` what the scorer extracted (``None``: nothing)."""

    name: str
    value: float | None
    answer: str | None = None
    explanation: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "answer": self.answer,
                "explanation": self.explanation, "metadata": self.metadata}


@dataclass(slots=True)
class SampleResult:
    """One sample's result: what the engine and ``assay score`` commit (:meth:`row`) and
    what reports and metrics read back."""

    run_id: str
    sample_id: str
    epoch: int
    input: Any
    target: Any
    output: str
    prediction: str | None
    scores: dict[str, dict[str, Any]]
    error: str | None
    latency_s: float
    input_tokens: int
    output_tokens: int
    transcript: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    model_s: float | None = None  # seconds in the model's calls (None: not recorded)
    wait_s: float | None = None  # seconds waiting for a free slot or the model's queue
    sample: dict[str, Any] = field(default_factory=dict)  # tools, files, the original row
    #: the rest of the outcome: tool_calls, the solve's metadata, call_log, each role's usage
    outcome: dict[str, Any] = field(default_factory=dict)
    seq: int = 0
    model_calls: int = 0
    cache_hits: int = 0
    created_at: float = 0.0

    def row(self) -> tuple[Any, ...]:
        """The ``samples`` columns after ``run_id``, JSON encoded (``INSERT_SAMPLE``)."""
        enc = _encode
        return (self.sample_id, self.epoch, self.seq, enc(self.input), enc(self.target),
                enc(self.transcript), self.output, self.prediction, enc(self.scores),
                self.error, self.latency_s, self.input_tokens, self.output_tokens,
                self.model_calls, self.cache_hits, enc(self.metadata) if self.metadata else None,
                self.created_at, self.model_s, self.wait_s,
                enc(self.sample) if self.sample else None,
                enc(self.outcome) if self.outcome else None)

    def score_value(self, name: str | None = None) -> float | None:
        """The value of score ``name`` (the first score when ``None``)."""
        if not self.scores:
            return None
        s = self.scores[name] if name else next(iter(self.scores.values()))
        return s.get("value")


def content_text(content: Any) -> str | None:
    """A reply's ``content`` as text: a list of parts (some servers send one) joined, the
    parts that are not text named, so nothing silently disappears."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, dict):  # {"type": "text", "text": {"value": ...}}
                    text = text.get("value")
                if isinstance(text, str):
                    out.append(text)
                elif part.get("type") not in (None, "text"):
                    out.append(f"[{part.get('type')}]")
        return "".join(out)
    if isinstance(content, (int, float, bool, dict)):
        return json.dumps(content)
    return str(content)
