"""``datagen_generate``: an LLM writes AIME-style problems, one sample per problem.

Each sample shows the model one real problem as a style example (the book's
prompt: integer answer 0-999, a topic, JSON output) and asks for
``{"problem", "answer", "solution", "topic"}``. The choice of reference example
and topic per sample is drawn from ``seed``, so the same seed and reference set
give the same pairing. Replies are parsed robustly (code fences, text around the
JSON, LaTeX backslashes that are not valid JSON escapes, including ``\\frac``,
which JSON would read as a form feed) and validated; an invalid reply is retried
with a short corrective message up to ``max_attempts`` times, and a generation
that never validates is recorded as a failure, never as a problem (the book
inserts a placeholder problem with answer 0 and clamps answers into 0-999).

Runs go through the engine, so every finished sample is committed at once and
``--resume`` redoes only missing or errored samples. :func:`problems_from_run`,
:func:`failures_from_run` and :func:`write_outputs` read a run back from the store.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import random
import re
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_open
from assay.core.checks import check_number
from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.datagen.problem import ANSWER_KEYS, PROBLEM_KEYS, SOLUTION_KEYS, Problem
from assay.errors import ConfigError
from assay.metrics.stats import mean_with_ci, proportion
from assay.tasks.base import Task
from assay.tasks.options import Field, TaskOptions
from assay.tasks.registry import task

#: the book's topic list
TOPICS = ("Algebra", "Geometry", "Number Theory", "Combinatorics", "Probability")
SYSTEM_PROMPT = "You are a professional mathematics competition problem designer."
DEFAULT_MAX_TOKENS = 2048
#: default for the embedded model (4096-token context: prompt, a rejected reply, a retry)
LOCAL_MAX_TOKENS = 1024

REFERENCE_BLOCK = """【Reference Example】(For style reference only, please generate a completely different problem)
Problem: {problem}
Answer: {answer}

"""

GENERATION_PROMPT = """You are a professional mathematics competition problem designer, skilled in creating AIME (American Invitational Mathematics Examination) style problems.

{reference}AIME Problem Characteristics:
1. Answer: An integer between 0 and 999
2. Topics: {topic_list}
3. Style: Requires multi-step reasoning, but no advanced theory
4. Difficulty: Medium to hard (similar to AIME problems 6-9)

Please generate a **completely different** AIME-style mathematics problem on the topic {topic}, including:
1. Problem statement (clear and complete, different from the reference)
2. Answer (an integer between 0 and 999, different from the reference)
3. Detailed solution (including all reasoning steps)
4. Topic classification ({topic})

Please output only the following JSON object (in JSON strings, write each LaTeX backslash twice, as in "\\\\frac"):
{{
    "problem": "Problem statement in English",
    "answer": 123,
    "solution": "Detailed solution steps in English",
    "topic": "{topic}"
}}
"""

CORRECTION_PROMPT = (
    "Your previous reply could not be used: {reasons}. Reply again with only one JSON object "
    'with the keys "problem" (string), "answer" (an integer from 0 to 999), "solution" '
    '(string) and "topic" (string). In JSON strings, write each LaTeX backslash twice '
    '("\\\\frac").'
)


def response_schema(topics: list[str] | None = None) -> dict[str, Any]:
    """JSON Schema of a generation: the answer an integer 0..999; topic from ``topics``."""
    topic: dict[str, Any] = {"type": "string"}
    if topics:
        topic["enum"] = list(topics)
    return {
        "type": "object",
        "properties": {
            "problem": {"type": "string"},
            "answer": {"type": "integer", "minimum": 0, "maximum": 999},
            "solution": {"type": "string"},
            "topic": topic,
        },
        "required": ["problem", "answer", "solution", "topic"],
        "additionalProperties": False,
    }


# -- parsing ------------------------------------------------------------------------------
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
    r"""Double the backslashes of LaTeX commands that are not meant as JSON escapes.

    A backslash already escaped (``\\``), before ``"`` or ``/``, a ``\uXXXX``, or a
    ``\n``/``\t``/... not followed by a LaTeX command name is left alone; anything else
    (``\sqrt``, ``\(``, ``\frac``, ``\times``, ``\neq``) becomes ``\\``.
    """
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


def _normalize(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


#: the placeholders of the prompt's JSON example (small models copy them back)
_TEMPLATE_TEXT = frozenset({_normalize("Problem statement in English"),
                            _normalize("Detailed solution steps in English")})


def validate_generation(obj: dict[str, Any], *, requested_topic: str | None = None,
                        reference_problem: str | None = None
                        ) -> tuple[dict[str, Any] | None, list[str]]:
    """Check a parsed generation; returns ``{problem, answer (int), solution, topic}`` or reasons.

    A reason reads ``code: detail``; codes are ``missing_problem``, ``answer_missing``,
    ``answer_not_integer``, ``answer_out_of_range``, ``missing_solution``,
    ``copied_reference``, ``template_echo`` (the prompt's placeholder text came back).
    """
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
            and _normalize(problem) == _normalize(reference_problem)):
        reasons.append("copied_reference: the problem is the reference example")
    if (isinstance(problem, str) and _normalize(problem) in _TEMPLATE_TEXT) or (
            isinstance(solution, str) and _normalize(solution) in _TEMPLATE_TEXT):
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


# -- rate limit ---------------------------------------------------------------------------
class RateLimiter:
    """At most one call starts per ``delay`` seconds, across every sample of a run."""

    def __init__(self, delay: float) -> None:
        self.delay = max(0.0, float(delay or 0.0))
        self._next = 0.0
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def wait(self) -> None:
        """Sleep until this caller may start its call."""
        if self.delay <= 0:
            return
        loop = asyncio.get_running_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = asyncio.Lock(), loop
        async with self._lock:
            now = time.monotonic()
            if self._next > now:
                await asyncio.sleep(self._next - now)
                now = time.monotonic()
            self._next = now + self.delay


# -- the benchmark ------------------------------------------------------------------------
def _topics(value: Any) -> list[str]:
    if value is None or value == "" or value == []:
        return list(TOPICS)
    items = value.split(",") if isinstance(value, str) else list(value)
    topics = [str(t).strip() for t in items if str(t).strip()]
    if not topics:
        raise ConfigError("--topics needs at least one topic")
    return list(dict.fromkeys(topics))


def _int_option(options: dict[str, Any], name: str, default: int, low: int) -> int:
    value = options.get(name)
    try:
        out = default if value is None else int(value)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"--{name.replace('_', '-')} must be an integer, got {value!r}") from e
    if out < low:
        raise ConfigError(f"--{name.replace('_', '-')} must be at least {low}")
    return out


class GenerateOptions(TaskOptions):
    """Options of ``datagen_generate``."""

    n: int = Field(30, description="How many problems.")
    reference: str | None = Field(None, description="Style examples: a JSON/JSONL file, an HF "
                                  "id, 'math500' or 'none' (default: the book's AIME set, "
                                  "MATH-500 when offline).")
    seed: int = Field(0, description="Seed for reference and topic choice.")
    topics: list[str] | str | None = Field(None, description="Topics (comma list); default the "
                                           "book's five.")
    delay: float = Field(0.0, description="Seconds between call starts (rate limit).")
    max_attempts: int = Field(3, description="Attempts per problem.")
    max_tokens: int | None = Field(None, description="Max tokens per reply (default 2048; 1024 "
                                   "for local models).")
    problem_key: str | None = Field(None, description="Reference column with the problem.")
    answer_key: str | None = Field(None, description="Reference column with the answer.")
    solution_key: str | None = Field(None, description="Reference column with the solution.")
    allow_fallback: bool = Field(True, description="Fall back to MATH-500 when the reference "
                                 "set cannot be fetched.")
    response_schema: bool = Field(True, description="Send the JSON Schema of a problem.")


@task("datagen_generate")
class GenerateBenchmark(Task):
    """Generate AIME-style problems (the book's ``AIMEGenerator``, done carefully).

    Options: ``n`` (problems, default 30), ``reference`` (file, Hugging Face id,
    ``math500``, ``none`` for no style example; default the book's
    ``TianHongZXY/aime-1983-2025`` with MATH-500 as offline fallback), ``seed``
    (reference/topic pairing, default 0), ``topics`` (list or comma string; default
    the book's five), ``delay`` (seconds between call starts, whole run),
    ``max_attempts`` (default 3), ``max_tokens`` (default 2048; 1024 for ``local``
    models), ``problem_key`` /
    ``answer_key`` / ``solution_key`` (reference columns), ``allow_fallback``
    (default true), ``response_schema`` (send the JSON Schema, default true).
    """

    description = ("An LLM generates AIME-style problems (integer answers 0-999) from seeded "
                   "reference examples; validated, retried, failures recorded.")
    headline_metric = "valid_rate"
    Options = GenerateOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        options = self.options
        self.n = _int_option(options, "n", 30, 1)
        self.seed = _int_option(options, "seed", 0, -(2**63))
        self.max_attempts = _int_option(options, "max_attempts", 3, 1)
        self.topics = _topics(options.get("topics"))
        check_number("--delay", options.get("delay"), minimum=0)
        try:
            delay = float(options.get("delay") or 0.0)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"--delay must be a number, got {options.get('delay')!r}") from e
        if delay < 0:
            raise ConfigError("--delay must be >= 0")
        self.limiter = RateLimiter(delay)
        self._samples: list[Sample] | None = None
        self._references: dict[str, Problem] = {}
        self._info: dict[str, Any] = {}

    # samples ------------------------------------------------------------------------
    def _load_references(self) -> tuple[list[Problem], dict[str, Any]]:
        ref = self.options.get("reference")
        if isinstance(ref, str) and ref.strip().lower() in ("none", "off", "no"):
            return [], {"source": None, "kind": "none"}
        from assay.datagen.references import load_reference

        return load_reference(
            ref, problem_key=self.options.get("problem_key"),
            answer_key=self.options.get("answer_key"),
            solution_key=self.options.get("solution_key"),
            allow_fallback=bool(self.options.get("allow_fallback", True)),
        )

    def samples(self) -> list[Sample]:
        """``n`` samples ``gen-0000``...; each with its seeded reference example and topic."""
        if self._samples is not None:
            return self._samples
        from assay.data.math500 import integer_form

        refs, ref_info = self._load_references()
        # AIME-like examples: integer answers 0-999, no Asymptote figure code
        pool = [p for p in refs if (v := integer_form(p.answer)) is not None and 0 <= v <= 999]
        pool = [p for p in pool if "[asy]" not in p.problem] or pool or refs
        rng = random.Random(self.seed)
        chosen: list[Problem | None] = []
        while pool and len(chosen) < self.n:  # without replacement while the pool lasts
            chosen.extend(pool[i] for i in rng.sample(range(len(pool)), len(pool)))
        chosen = chosen[: self.n] if pool else [None] * self.n
        topics = (self.topics * math.ceil(self.n / len(self.topics)))[: self.n]
        rng.shuffle(topics)
        width = max(4, len(str(self.n - 1)))
        samples = []
        for i, (ref, topic) in enumerate(zip(chosen, topics, strict=True)):
            block = REFERENCE_BLOCK.format(problem=ref.problem, answer=ref.answer) if ref else ""
            prompt = GENERATION_PROMPT.format(reference=block, topic=topic,
                                              topic_list=", ".join(self.topics))
            meta = {"index": i, "seed": self.seed, "topic": topic,
                    "reference_id": ref.problem_id if ref else None,
                    "reference_source": ref.source if ref else None}
            samples.append(Sample(id=f"gen-{i:0{width}d}", input=prompt, metadata=meta))
            if ref is not None:
                self._references[ref.problem_id] = ref
        h = hashlib.sha256()
        for s in samples:
            h.update(json.dumps([s.id, s.input], ensure_ascii=False).encode())
        self._info = {
            "source": ref_info.get("source"), "reference": ref_info,
            "fallback_reason": ref_info.get("fallback_reason"),
            "reference_pool": len(pool), "n": self.n, "seed": self.seed,
            "topics": self.topics, "content_hash": h.hexdigest(),
        }
        self._samples = samples
        return samples

    def generation_params(self) -> dict[str, Any]:
        """Room for a full solution by default; run parameters override."""
        return {"max_tokens": int(self.options.get("max_tokens") or DEFAULT_MAX_TOKENS),
                **self.run_params}

    def build_messages(self, sample: Sample) -> list[Message]:
        """The book's system prompt, then the generation prompt."""
        return [Message("system", SYSTEM_PROMPT), Message("user", str(sample.input))]

    # solve --------------------------------------------------------------------------
    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """Generate, parse, validate; retry with a corrective message up to ``max_attempts``.

        A retry sends the prompt, the last rejected reply and the correction (not every
        earlier attempt), so the context stays bounded; the transcript keeps them all.
        """
        base = self.build_messages(sample)
        transcript = list(base)
        messages = list(base)
        params = self.generation_params()
        model_id = str(getattr(agent, "model_id", "") or "")
        if (model_id.startswith("local") and not self.options.get("max_tokens")
                and "max_tokens" not in self.run_params):
            params["max_tokens"] = LOCAL_MAX_TOKENS  # the embedded model has a 4096 context
        use_schema = bool(self.options.get("response_schema", True))
        schema = response_schema(self.topics) if use_schema else None
        ref_id = sample.metadata.get("reference_id")
        ref = self._references.get(ref_id) if ref_id else None
        failures: list[dict[str, Any]] = []
        parsed: dict[str, Any] | None = None
        text = ""
        attempt = 0
        for attempt in range(1, self.max_attempts + 1):
            await self.limiter.wait()
            reply = await agent.generate(messages, response_schema=schema, **params)
            text = reply.message.content or ""
            transcript.append(Message("assistant", text))
            obj, reasons = parse_generation(text)
            if obj is not None:
                parsed, reasons = validate_generation(
                    obj, requested_topic=sample.metadata.get("topic"),
                    reference_problem=ref.problem if ref else None)
            if parsed is not None:
                break
            failures.append({"attempt": attempt, "reasons": reasons, "raw": text[:2000]})
            if attempt < self.max_attempts:
                fix = Message("user", CORRECTION_PROMPT.format(reasons="; ".join(reasons)))
                transcript.append(fix)
                messages = [*base, Message("assistant", text), fix]
        meta: dict[str, Any] = {"attempts": attempt, "failures": failures, "model": model_id,
                                "created_at": datetime.now(timezone.utc).isoformat(
                                    timespec="seconds")}
        if parsed is not None:
            meta["parsed"] = parsed
        output = json.dumps(parsed, ensure_ascii=False) if parsed is not None else text
        return Outcome(transcript=transcript, output=output, metadata=meta)

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        """``valid`` 1.0 with the problem (and its provenance), or 0.0 with the failures."""
        m = outcome.metadata
        common = {"attempts": m.get("attempts", 0), "topic": sample.metadata.get("topic"),
                  "reference_id": sample.metadata.get("reference_id")}
        parsed = m.get("parsed")
        if parsed is None:
            last = m.get("failures", [{}])[-1].get("reasons", []) if m.get("failures") else []
            return [Score("valid", 0.0, None,
                          f"no valid problem after {m.get('attempts', 0)} attempt(s): "
                          + "; ".join(last), {**common, "failure": m.get("failures", [])})]
        problem = Problem(
            problem_id=sample.id, problem=parsed["problem"], answer=str(parsed["answer"]),
            solution=parsed["solution"], topic=parsed.get("topic"), source="generated",
            provenance={
                "model": m.get("model"), "seed": sample.metadata.get("seed"),
                "reference_id": sample.metadata.get("reference_id"),
                "reference_source": sample.metadata.get("reference_source"),
                "requested_topic": sample.metadata.get("topic"),
                "attempts": m.get("attempts"), "created_at": m.get("created_at"),
                "sample_id": sample.id, "generator": "assay datagen_generate",
            },
        )
        return [Score("valid", 1.0, problem.problem,
                      f"valid after {m.get('attempts')} attempt(s)",
                      {**common, "problem": problem.to_dict(),
                       "retries": list(m.get("failures", []))})]

    # metrics ------------------------------------------------------------------------
    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Valid rate (Wilson), failures and reasons, topics, answer range, attempts."""
        done = [r for r in results if r.error is None and "valid" in r.scores]
        valid = [r for r in done if r.score_value("valid") == 1.0]
        failed = [r for r in done if r.score_value("valid") != 1.0]
        meta = [r.scores["valid"].get("metadata") or {} for r in done]
        attempts = [int(m.get("attempts") or 0) for m in meta]
        first_try = sum(1 for r, a in zip(done, attempts, strict=True)
                        if a == 1 and r.score_value("valid") == 1.0)
        final_reasons: Counter[str] = Counter()
        for r in failed:
            fails = (r.scores["valid"].get("metadata") or {}).get("failure") or []
            for reason in (fails[-1].get("reasons", []) if fails else []):
                final_reasons[reason_code(reason)] += 1
        retry_reasons: Counter[str] = Counter()
        for m in meta:
            for f in (m.get("failure") or m.get("retries") or []):
                for reason in f.get("reasons", []):
                    retry_reasons[reason_code(reason)] += 1
        problems = [(r.scores["valid"].get("metadata") or {}).get("problem") or {} for r in valid]
        answers = [int(p["answer"]) for p in problems if str(p.get("answer", "")).isdigit()]
        hist = [0] * 10
        for a in answers:
            hist[min(9, a // 100)] += 1
        seen: set[str] = set()
        duplicates = 0
        for p in problems:
            key = _normalize(str(p.get("problem", "")))
            duplicates += key in seen
            seen.add(key)
        return {
            "valid_rate": proportion(len(valid), len(done)),
            "first_attempt_valid_rate": proportion(first_try, len(done)),
            "n_samples": len(results), "n_valid": len(valid), "n_failed": len(failed),
            "n_errors": len(results) - len(done),
            "failure_reasons": dict(final_reasons.most_common()),
            "retry_reasons": dict(retry_reasons.most_common()),
            "mean_attempts": mean_with_ci([float(a) for a in attempts]),
            "topics": dict(Counter(p.get("topic") or "unknown" for p in problems).most_common()),
            "requested_topics": dict(Counter(
                m.get("topic") or "unknown" for m in meta).most_common()),
            "answer_range": {
                "min": min(answers) if answers else None,
                "max": max(answers) if answers else None,
                "histogram": [{"bin": f"{100 * i}-{100 * i + 99}", "count": c}
                              for i, c in enumerate(hist)],
            },
            "duplicate_problems": duplicates,
        }

    @classmethod
    def report_extra(cls, metrics: dict[str, Any],
                     results: list[SampleResult]) -> dict[str, Any]:
        """Topic distribution, answer histogram and failure reasons."""
        sections = []
        n_valid = metrics.get("n_valid") or 0
        if metrics.get("topics"):
            sections.append({"title": "Topics of valid problems", "headers": ["topic", "count"],
                             "rows": [[t, c] for t, c in metrics["topics"].items()],
                             "bars": [(t, c / n_valid) for t, c in metrics["topics"].items()]
                             if n_valid else []})
        hist = (metrics.get("answer_range") or {}).get("histogram") or []
        if n_valid and hist:
            sections.append({"title": "Answer range", "headers": ["answers", "count"],
                             "rows": [[h["bin"], h["count"]] for h in hist],
                             "bars": [(h["bin"], h["count"] / n_valid) for h in hist]})
        if metrics.get("failure_reasons") or metrics.get("retry_reasons"):
            codes = sorted(set(metrics.get("failure_reasons", {}))
                           | set(metrics.get("retry_reasons", {})))
            sections.append({
                "title": "Generation failures", "headers": ["reason", "final", "any attempt"],
                "rows": [[c, metrics.get("failure_reasons", {}).get(c, 0),
                          metrics.get("retry_reasons", {}).get(c, 0)] for c in codes],
                "note": "final: generations that never validated (recorded as failures, not "
                        "written as problems); any attempt: every rejected reply, retries "
                        "included."})
        recs = []
        if metrics.get("n_failed"):
            recs.append(f"{metrics['n_failed']} generation(s) failed validation after all "
                        "attempts; they are excluded from the problem set.")
        return {"sections": sections, "recommendations": recs}

    @classmethod
    def write_artifacts(cls, run: dict[str, Any], results: list[SampleResult],
                        out_dir: Any) -> dict[str, Any]:
        """The valid problems (JSON) and the failures (JSONL) beside the reports."""
        out = Path(out_dir) / "generated_problems.json"
        paths = _write(_problems(run, results), _failures(run["id"], results), out)
        return {"problems": str(paths["problems"]), "failures": str(paths["failures"])}


# -- reading runs back --------------------------------------------------------------------
def _problems(run: dict[str, Any], results: list[SampleResult]) -> list[Problem]:
    out: list[Problem] = []
    seen: set[str] = set()
    model = (run.get("model") or {}).get("model")
    for r in results:
        if r.error is not None or r.score_value("valid") != 1.0:
            continue
        d = dict((r.scores["valid"].get("metadata") or {}).get("problem") or {})
        if not d:
            continue
        pid = r.sample_id if r.epoch == 0 else f"{r.sample_id}-e{r.epoch}"
        if pid in seen:
            continue
        seen.add(pid)
        prov = dict(d.get("provenance") or {})
        prov.setdefault("model", model)
        prov["run_id"] = run["id"]
        if r.epoch:
            prov["epoch"] = r.epoch
        d.update(problem_id=pid, provenance=prov)
        out.append(Problem(**{k: v for k, v in d.items() if k in Problem.__dataclass_fields__}))
    return out


def _failures(run_id: str, results: list[SampleResult]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        meta = r.metadata or {}
        base = {"run_id": run_id, "sample_id": r.sample_id, "epoch": r.epoch,
                "topic": meta.get("topic"), "reference_id": meta.get("reference_id")}
        if r.error is not None:
            out.append({**base, "kind": "error", "error": r.error, "attempts": None,
                        "failure": []})
        elif r.score_value("valid") != 1.0:
            sm = r.scores.get("valid", {}).get("metadata") or {}
            out.append({**base, "kind": "invalid", "error": None,
                        "attempts": sm.get("attempts"), "failure": sm.get("failure") or []})
    return out


def problems_from_run(store: Any, run_id: str) -> list[Problem]:
    """The valid problems of a generation run, each once, with provenance (run id, model)."""
    run = store.get_run(run_id)
    return _problems(run, store.results(run["id"]))


def failures_from_run(store: Any, run_id: str) -> list[dict[str, Any]]:
    """Samples without a problem: ``kind`` ``invalid`` (never validated, with each attempt's
    reasons) or ``error`` (the call failed; ``--resume`` retries these)."""
    run = store.get_run(run_id)
    return _failures(run["id"], store.results(run["id"]))


def _write(problems: list[Problem], failures: list[dict[str, Any]], out: Path
           ) -> dict[str, Any]:
    from assay.datagen.problem import save_problems

    path = save_problems(problems, out)
    fail_path = path.with_name(f"{path.stem}_failures.jsonl")
    with atomic_open(fail_path) as f:
        for row in failures:
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
    return {"problems": path, "failures": fail_path, "n_problems": len(problems),
            "n_failures": len(failures)}


def write_outputs(store: Any, run_id: str, out_path: str | Path) -> dict[str, Any]:
    """Write the valid problems to ``out_path`` (``.jsonl``: JSONL, else the book's JSON
    list) and every failure to ``<stem>_failures.jsonl`` beside it.

    Returns ``{"problems": Path, "failures": Path, "n_problems", "n_failures"}``.
    """
    run = store.get_run(run_id)
    results = store.results(run["id"])
    return _write(_problems(run, results), _failures(run["id"], results), Path(out_path))
