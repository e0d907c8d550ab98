"""``bfcl``: tool calling on the Berkeley Function Calling Leaderboard (v4), scored as officially.

``mode`` ``fc``: native function calling (OpenAI tool schemas, dots in names replaced as the
official FC handlers do; the ``local`` model calls by constrained decoding). ``prompt``: the
official system prompt, replies decoded from ``[func(a=1), ...]`` (Python, Java or
JavaScript) as the official decoder does. The headline score (``bfcl``) is always the
official one; ``bfcl_tolerant``, labelled, also accepts calls in prose, fences or JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator

from assay.core.checks import check_number
from assay.core.types import Message, Outcome, Sample, SampleResult, Score, ToolSpec
from assay.errors import ConfigError
from assay.tasks.base import LoadedData, Task, run_params_of
from assay.tasks.bfcl.agentic.backends import check_requirements
from assay.tasks.bfcl.agentic.data import load_agentic
from assay.tasks.bfcl.agentic.scoring import score_agentic
from assay.tasks.bfcl.agentic.solve import solve_agentic
from assay.tasks.bfcl.categories import GROUPS, expand, is_agentic, is_multi_turn, language_of
from assay.tasks.bfcl.data import content_hash, load_category, locate
from assay.tasks.bfcl.export import export_results
from assay.tasks.bfcl.metrics import bfcl_metrics
from assay.tasks.bfcl.multiturn.data import load_multi_turn
from assay.tasks.bfcl.multiturn.loop import run_entry
from assay.tasks.bfcl.multiturn.scoring import score_multi_turn
from assay.tasks.bfcl.official import run_official
from assay.tasks.bfcl.prompts import (
    add_language_hints,
    fc_result,
    official_sort_key,
    prompt_messages,
    tool_specs,
)
from assay.tasks.bfcl.report import report_extra
from assay.tasks.bfcl.scoring import score_entry
from assay.tasks.info import DataSource, TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import task

MODES = ("fc", "prompt")


def _weights(value: Any) -> Any:
    """``cat=w,cat=w`` (the command line's form) into a dict; dicts pass through."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    out: dict[str, float] = {}
    for item in value.split(","):
        cat, sep, w = item.partition("=")
        try:
            out[cat.strip()] = float(w)
        except ValueError:
            sep = ""
        if not sep:
            raise ValueError(f"weights are CATEGORY=NUMBER pairs, got {item!r}")
    return out


class BFCLOptions(TaskOptions):
    """Options of the ``bfcl`` task."""

    category: str = Field("simple_python", description="Category, group (non_live, live, ast, "
                          "all_single_turn, multi_turn, memory, web_search, agentic, all) or "
                          "comma list.")
    mode: str = Field("fc", description="fc: native tool calls; prompt: the official prompt "
                      "and text decoding.")
    bfcl_data_dir: str | None = PathField(None, description="A gorilla clone or its bfcl_eval/data "
                                      "(default: installed bfcl_eval, then the cache filled "
                                      "by 'assay data pull bfcl').")
    underscore_to_dot: bool | None = Field(None, description="Expect '.' in function names as "
                                           "'_' (default: on for fc, off for prompt).")
    tolerant: bool = Field(True, description="Also report the labelled tolerant score (calls "
                           "in prose, fences or JSON).")
    weights: Annotated[dict[str, float] | None, BeforeValidator(_weights)] = Field(
        None, description="Weights for a weighted accuracy, e.g. simple_python=2,multiple=1.")
    official: bool = Field(False, description="Also run the official 'bfcl evaluate' (needs "
                           "bfcl-eval installed) and show its numbers beside ours.",
                           json_schema_extra={"flag_only": True})
    max_tokens: int | None = Field(None, description="Max tokens per reply (default 512).")
    check_timeout: float | None = Field(None, description="Seconds the multi-turn checker may "
                                        "spend executing one entry's calls (default 60); past "
                                        "it the entry is a scoring error.")


def _report_skipped(samples: list[Sample], skipped: dict[str, str]) -> None:
    """One note per category a group left out; when nothing is left, one error line."""
    if not skipped:
        return
    if not samples:
        cats = ", ".join(skipped)
        raise ConfigError(f"{cats} cannot run here: {next(iter(skipped.values()))}")
    for cat, why in skipped.items():
        print(f"note: BFCL {cat} left out: {why}", file=sys.stderr)


@task("bfcl")
class BFCLTask(Task):
    """BFCL v4: the single-turn (AST and relevance), multi-turn and agentic (memory, web
    search) categories, each scored by the official rules."""

    info = TaskInfo(category="tool_use", agent=True,
                    tags=("function-calling", "tools", "agent", "ast-checker", "multi-turn"),
                    aliases=("berkeley_function_calling", "bfcl_v4", "function_calling"),
                    data=(DataSource("bfcl", "BFCL v4's official data, from the bfcl-eval "
                                     "wheel on PyPI", pull="assay.tasks.bfcl.data:pull_line",
                                     versioned=True,
                                     present="assay.tasks.bfcl.data:is_present"),))
    Options = BFCLOptions
    description = ("Berkeley Function Calling Leaderboard v4 (single-turn, multi-turn, agentic), "
                   "official verdicts, fc or prompt mode.")

    opts: BFCLOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        o = self.opts
        if o.mode not in MODES:
            raise ConfigError(f"--mode must be 'fc' or 'prompt', got {o.mode!r}")
        self.categories = expand(o.category)
        #: categories named one by one (a group's members may be skipped, these may not)
        self._named = set(expand([c for c in str(o.category).split(",")
                                  if c.strip() and c.strip() not in GROUPS]))
        check_number("--max-tokens", o.max_tokens, minimum=1, integer=True)
        check_number("--check-timeout", o.check_timeout, above=0)
        self.underscore_to_dot = (o.mode == "fc") if o.underscore_to_dot is None else bool(
            o.underscore_to_dot)

    def read(self) -> LoadedData:
        """Entries of the selected categories in official id order; each sample carries what
        solving and scoring it again need (function docs, fc tools, memory prerequisites)."""
        source = locate(self.opts.bfcl_data_dir)
        samples: list[Sample] = []
        files: list[Any] = []
        counts: dict[str, int] = {}
        skipped: dict[str, str] = {}  # category -> why a group left it out
        for cat in self.categories:
            if is_multi_turn(cat):
                samples.extend(self._multi_turn_samples(source, cat, files, counts))
                continue
            if is_agentic(cat):
                if self._runnable(cat, skipped):
                    samples.extend(self._agentic_samples(source, cat, files, counts))
                continue
            cd = load_category(source, cat)
            files.extend(cd.files)
            counts[cat] = len(cd.entries)
            lang = language_of(cat)
            for e in sorted(cd.entries, key=lambda e: official_sort_key(e["id"])):
                turn = e["question"][0]
                tools = None
                if self.opts.mode == "fc":
                    tools = self._tools(add_language_hints(e["function"], lang))
                samples.append(Sample(
                    id=e["id"],
                    input=[Message(m["role"], m["content"]) for m in turn],
                    target=cd.ground_truth.get(e["id"]),
                    tools=tools,
                    metadata={"category": cat, "language": lang, "functions": e["function"]},
                ))
        _report_skipped(samples, skipped)
        info = {**source.describe(), "content_hash": content_hash(files),
                "categories": counts, "mode": self.opts.mode,
                **({"skipped_categories": skipped} if skipped else {}),
                "underscore_to_dot": self.underscore_to_dot}
        return LoadedData(samples, info, dict(self.options))

    @staticmethod
    def _multi_turn_samples(source: Any, cat: str, files: list[Any],
                            counts: dict[str, int]) -> list[Sample]:
        """A multi-turn category's entries, with all the loop and the checker need (every
        turn's questions, classes and initial state, visible and withheld docs)."""
        cd = load_multi_turn(source, cat)
        files.extend(cd.files)
        counts[cat] = len(cd.entries)
        out = []
        for e in sorted(cd.entries, key=lambda e: official_sort_key(e["id"])):
            first = e["question"][0] if e["question"] else []
            out.append(Sample(
                id=e["id"], input=[Message(m["role"], m["content"]) for m in first],
                target=cd.ground_truth[e["id"]],
                metadata={"category": cat, "language": "python", "functions": e["function"],
                          "questions": e["question"], "involved_classes": e["involved_classes"],
                          "initial_config": e["initial_config"],
                          "missed_function": e["missed_function"], "turns": len(e["question"])}))
        return out

    def _runnable(self, cat: str, skipped: dict[str, str]) -> bool:
        """Whether an agentic category can run here: one named by itself that cannot is an
        error; one from a group is left out (into ``skipped``, with what it needs)."""
        try:
            check_requirements(cat)
        except ConfigError as e:
            if cat in self._named:
                raise
            skipped[cat] = str(e)
            return False
        return True

    def _agentic_samples(self, source: Any, cat: str, files: list[Any],
                         counts: dict[str, int]) -> list[Sample]:
        """A memory or web-search category's entries; what the loop and checker need travels
        in the sample, a memory question's scenario prerequisites too (in order; the run
        shares each chain between the scenario's samples)."""
        check_requirements(cat)
        data = load_agentic(source, cat)
        files.extend(data.files)
        counts[cat] = len(data.entries)
        out = []
        for e in sorted(data.entries, key=lambda e: official_sort_key(e["id"])):
            meta: dict[str, Any] = {
                "category": cat, "language": "python", "functions": e["function"],
                "questions": e["question"], "involved_classes": e["involved_classes"]}
            if "scenario" in e:
                meta["scenario"] = e["scenario"]
                meta["prereq_ids"] = e["depends_on"]
                meta["prereq_questions"] = [p["question"]
                                            for p in data.prereqs[e["scenario"]]]
            if "initial_config" in e:
                meta["initial_config"] = e["initial_config"]
            out.append(Sample(
                id=e["id"], input=[Message(m["role"], m["content"]) for m in e["question"][0]],
                target=data.ground_truth[e["id"]], metadata=meta))
        return out

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        """Deterministic, room for several calls."""
        return {"max_tokens": int(self.opts.max_tokens or 512), "temperature": 0.0,
                **run_params_of(ctx)}

    def _tools(self, hinted: list[dict[str, Any]]) -> list[ToolSpec]:
        """The OpenAI tools for an entry's (language-hinted) function docs."""
        return tool_specs(hinted, underscore_to_dot=self.underscore_to_dot)

    def affinity(self, sample: Sample) -> str | None:
        """A memory scenario's questions share its prerequisite chain (run state): one worker."""
        meta = sample.metadata
        return (f"bfcl.memory/{meta['category']}/{meta['scenario']}"
                if meta.get("scenario") is not None else None)

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """One turn: native tools (fc) or the official system prompt (prompt)."""
        params = self.generation_params(agent)
        text_only = getattr(agent, "text_only", False)
        mode = "fc" if (self.opts.mode == "fc" and not text_only) else "prompt"
        if is_multi_turn(sample.metadata["category"]):
            return await run_entry(sample.metadata, agent, mode=mode, params=params)
        if is_agentic(sample.metadata["category"]):
            return await solve_agentic(sample, agent, mode=mode, params=params)
        functions = sample.metadata["functions"]
        if mode == "fc":
            messages = list(sample.input) if isinstance(sample.input, list) else []
            tools = sample.tools or self._tools(
                add_language_hints(functions, sample.metadata["language"]))
            reply = await agent.generate(messages, tools=tools, tool_choice="auto", **params)
        else:
            turn = [m.to_dict() for m in sample.input] if isinstance(sample.input, list) else []
            turn = [{"role": m["role"], "content": m["content"]} for m in turn]
            wire = prompt_messages(turn, add_language_hints(functions,
                                                            sample.metadata["language"]))
            messages = [Message(m["role"], m["content"]) for m in wire]
            reply = await agent.generate(messages, **params)
        messages.append(reply.message)
        return Outcome(transcript=messages, output=reply.message.content or "",
                       tool_calls=reply.message.tool_calls, metadata={"mode": mode})

    @staticmethod
    def raw_result(outcome: Outcome) -> Any:
        """The output in the official result-file form (text, or FC ``[{name: args}]``)."""
        if outcome.metadata.get("mode") == "fc" and outcome.tool_calls is not None:
            return fc_result(outcome.tool_calls)
        return outcome.output

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        """The official verdict (``bfcl``) and, when enabled, the tolerant one."""
        mode = outcome.metadata.get("mode", self.opts.mode)
        if is_multi_turn(sample.metadata["category"]):
            return score_multi_turn(sample, outcome.metadata.get("multi_turn"), mode,
                                    check_timeout=self.opts.check_timeout)
        if is_agentic(sample.metadata["category"]):
            return score_agentic(sample, outcome.metadata.get("agentic"), mode)
        # A text-only agent is driven in prompt mode, where the official handlers keep
        # dots in names; an explicit --underscore-to-dot still wins.
        utd = (self.underscore_to_dot if self.opts.underscore_to_dot is not None
               else mode == "fc")
        return score_entry(
            raw=self.raw_result(outcome), text=outcome.output,
            functions=sample.metadata["functions"],
            ground_truth=sample.target, category=sample.metadata["category"],
            language=sample.metadata["language"], mode=mode, underscore_to_dot=utd,
            tolerant=bool(self.opts.tolerant),
        )

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Per-category accuracy with intervals, official aggregates, error types."""
        return bfcl_metrics(results, (options or {}).get("weights"))

    @classmethod
    def report_extra(cls, metrics: dict[str, Any],
                     results: list[SampleResult]) -> dict[str, Any]:
        return report_extra(metrics, results)

    @classmethod
    def after_run(cls, result: Any, options: dict[str, Any]) -> None:
        """With ``--official``: run the official ``bfcl evaluate`` and show its numbers."""
        if options.get("official"):
            print(run_official(result.run_id).summary())

    @classmethod
    def write_artifacts(cls, run: dict[str, Any], results: list[SampleResult],
                        out_dir: Any) -> dict[str, Any]:
        """Official result files under ``<run dir>/result/<model>/<group>/``."""
        paths = export_results(results, Path(out_dir) / "result", run["model"].get("model", "model"))
        return {f"bfcl_result:{p.name}": p for p in paths}
