"""IFEval and IFBench: prompts with verifiable instructions, scored strict and loose. Data: JSONL
(``key``, ``prompt``, ``instruction_id_list``, ``kwargs``), one user message per prompt."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from assay.core.checks import check_number
from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.data.files import sha256_file
from assay.errors import ConfigError, DatasetError
from assay.metrics.stats import mean_with_ci, proportion
from assay.metrics.summary import error_messages, usage_summary
from assay.tasks.base import LoadedData, Task, run_params_of
from assay.tasks.info import TaskInfo
from assay.tasks.instructions.scoring import Verdict, check_known, checker_registry
from assay.tasks.instructions.scoring import judge as judge_response
from assay.tasks.options import Field, PathField, TaskOptions

#: about 750 English words: all but IFEval's longest asks (up to 1,200 words)
DEFAULT_MAX_TOKENS = 1024

STRICT, LOOSE = "prompt_level_strict", "prompt_level_loose"
INST_STRICT, INST_LOOSE = "inst_level_strict", "inst_level_loose"


class InstructionOptions(TaskOptions):
    data: str | None = PathField(None, description="The prompts: a JSONL file with key, prompt, "
                             "instruction_id_list and kwargs per line (IFEval's "
                             "input_data.jsonl or IFBench_test.jsonl).",
                             json_schema_extra={"flags": ["-d"]})
    flavor: Literal["ifeval", "ifbench"] = Field(
        "ifeval", description="Which checkers: ifeval (Google's 25) or ifbench (Allen AI's 58).")
    max_tokens: int = Field(DEFAULT_MAX_TOKENS, description="Max tokens per answer (default "
                            "1024; IFEval asks for up to 1,200 words, which needs ~1,700).")
    system_prompt: str | None = Field(None, description="System message for every sample "
                                      "(none by default, as in the official runs).")
    nltk_data: str | None = PathField(None, description="An NLTK data folder holding punkt_tab, "
                                  "stopwords and averaged_perceptron_tagger_eng (default: "
                                  "$ASSAY_HOME/data/nltk, filled from PyPI).")


class InstructionRow(BaseModel):
    model_config = ConfigDict(extra="ignore")

    key: int | str
    prompt: str
    instruction_id_list: list[str]
    kwargs: list[dict[str, Any]]


def read_rows(path: Path) -> list[InstructionRow]:
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = InstructionRow.model_validate_json(line)
                except ValidationError as e:
                    err = e.errors()[0]
                    where = ".".join(str(x) for x in err["loc"]) or "row"
                    raise DatasetError(f"{path}:{i}: {where}: {err['msg']}; each line needs "
                                       "key, prompt, instruction_id_list and kwargs") from None
                if len(row.kwargs) != len(row.instruction_id_list):
                    raise DatasetError(f"{path}:{i}: {len(row.instruction_id_list)} instruction "
                                       f"ids but {len(row.kwargs)} kwargs")
                rows.append(row)
    except (OSError, UnicodeDecodeError) as e:
        raise DatasetError(f"cannot read {path}: {e}") from e
    return rows


class InstructionTask(Task):
    """IFEval / IFBench: one user prompt per sample, verdicts per verifiable instruction."""

    name: ClassVar[str] = "instructions"
    description: ClassVar[str] = ("IFEval / IFBench verifiable instruction following: "
                                  "prompt- and instruction-level accuracy, strict and loose.")
    headline_metric: ClassVar[str | None] = "prompt_level_strict_acc"
    info = TaskInfo(category="instruction_following", tags=("instructions", "verifiable"))
    Options = InstructionOptions

    opts: InstructionOptions

    def __init__(self, **options: Any) -> None:
        given = {k: v for k, v in options.items() if v is not None}
        super().__init__(options={"flavor": "ifeval", **given},
                         system_prompt=given.get("system_prompt"))
        if not self.opts.data:
            raise ConfigError("the instructions task needs its prompts: --data FILE.jsonl "
                              "(IFEval's input_data.jsonl or IFBench_test.jsonl)")
        check_number("--max-tokens", self.opts.max_tokens, minimum=1, integer=True)

    def read(self) -> LoadedData:
        path = Path(str(self.opts.data)).expanduser()
        if not path.is_file():
            raise DatasetError(f"data file not found: {path}")
        rows = read_rows(path)
        if not rows:
            raise DatasetError(f"{path}: the file has no rows")
        flavor = self.opts.flavor
        registry = checker_registry(flavor, self.opts.nltk_data)
        samples, seen = [], set()
        for row in rows:
            sid = str(row.key)
            if sid in seen:
                raise DatasetError(f"{path}: key {sid!r} is used twice; keys must be unique")
            seen.add(sid)
            try:
                check_known(flavor, row.instruction_id_list, registry)
            except ConfigError as e:
                raise DatasetError(f"{path}: key {sid}: {e}") from None
            # None values are dropped by the official loops too; IFBench's rows carry 42
            # keys per instruction, nearly all None
            kwargs = [{k: v for k, v in kw.items() if v is not None} for kw in row.kwargs]
            samples.append(Sample(id=sid, input=row.prompt, metadata={
                "flavor": flavor, "instruction_id_list": list(row.instruction_id_list),
                "kwargs": kwargs}))
        info = {"source": str(path.resolve()), "sha256": sha256_file(path), "flavor": flavor,
                "rows": len(samples),
                "instructions": sum(len(s.metadata["instruction_id_list"]) for s in samples)}
        return LoadedData(samples, info, dict(self.options))

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        return {"max_tokens": int(self.opts.max_tokens or DEFAULT_MAX_TOKENS), **run_params_of(ctx)}

    def build_messages(self, sample: Sample) -> list[Message]:
        system = self.opts.system_prompt
        msgs = [Message("system", system)] if system else []
        return [*msgs, Message("user", _prompt_of(sample))]

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        meta = sample.metadata
        flavor = meta.get("flavor") or self.opts.flavor
        verdicts = judge_response(flavor, outcome.output or "", meta["instruction_id_list"],
                                  meta.get("kwargs"), _prompt_of(sample),
                                  nltk_data=self.opts.nltk_data)
        return scores_of(verdicts)

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        return instruction_metrics(results)

    @classmethod
    def report_extra(cls, metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
        groups = metrics.get("by_group") or {}
        if not groups:
            return {}
        rows = [[g, v["strict"]["n"], _pct(v["strict"]["value"]), _pct(v["loose"]["value"])]
                for g, v in sorted(groups.items())]
        return {"sections": [{
            "title": "Instruction-level accuracy by group",
            "headers": ["group", "instructions", "strict", "loose"], "rows": rows,
            "bars": [(g, v["strict"]["value"] or 0.0) for g, v in sorted(groups.items())],
            "note": "Strict: the reply as it is. Loose: also without its first or last line "
                    "and without '*' (IFEval's official definition)."}]}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _prompt_of(sample: Sample) -> str:
    if isinstance(sample.input, str):
        return sample.input
    users = [m.content for m in sample.input if m.role == "user" and m.content]
    return str(users[-1]) if users else ""


def scores_of(verdicts: list[Verdict]) -> list[Score]:
    """The four scores of one reply; the verdicts in the first's metadata."""
    n = len(verdicts)
    strict = sum(v.strict for v in verdicts)
    loose = sum(v.loose for v in verdicts)
    missed = [v.instruction_id for v in verdicts if not v.strict]
    summary = f"strict {strict}/{n}, loose {loose}/{n}"
    why = ("all instructions followed" if not missed
           else "not followed (strict): " + ", ".join(missed))
    meta: dict[str, Any] = {"instructions": [v.to_dict() for v in verdicts]}
    return [
        Score(STRICT, float(strict == n), summary, why, meta),
        Score(LOOSE, float(loose == n), summary, ""),
        Score(INST_STRICT, strict / n if n else None, summary, ""),
        Score(INST_LOOSE, loose / n if n else None, summary, ""),
    ]


def verdicts_of(result: SampleResult) -> list[dict[str, Any]]:
    score = (result.scores or {}).get(STRICT) or {}
    return list((score.get("metadata") or {}).get("instructions") or [])


def _rate(per_key: dict[Any, list[float]]) -> dict[str, Any]:
    """A rate over keys, epochs averaged first: Wilson when every mean is 0 or 1, else t."""
    means = [sum(v) / len(v) for v in per_key.values()]
    if all(m in (0.0, 1.0) for m in means):
        out = proportion(int(sum(means)), len(means))
    else:
        out = mean_with_ci(means)
    if any(len(v) > 1 for v in per_key.values()):
        out["clustered_by"] = "sample"
        out["observations"] = sum(len(v) for v in per_key.values())
    return out


def _modes() -> dict[str, dict[Any, list[float]]]:
    return {"strict": defaultdict(list), "loose": defaultdict(list)}


def instruction_metrics(results: list[SampleResult]) -> dict[str, Any]:
    scored = [r for r in results if r.error is None and r.scores]
    errors = [r for r in results if r.error is not None]
    prompt, inst = _modes(), _modes()
    by_group: dict[str, dict[str, dict[Any, list[float]]]] = defaultdict(_modes)
    by_id: dict[str, dict[str, dict[Any, list[float]]]] = defaultdict(_modes)
    checker_errors = 0
    for r in scored:
        verdicts = verdicts_of(r)
        for mode in ("strict", "loose"):
            prompt[mode][r.sample_id].append(float(all(v[mode] for v in verdicts)))
        for i, v in enumerate(verdicts):
            key = (r.sample_id, i)
            checker_errors += bool(v.get("error"))
            for mode in ("strict", "loose"):
                value = float(v[mode])
                inst[mode][key].append(value)
                by_group[v["id"].split(":")[0]][mode][key].append(value)
                by_id[v["id"]][mode][key].append(value)
    n_total = len(results)
    return {
        "prompt_level_strict_acc": _rate(prompt["strict"]),
        "prompt_level_loose_acc": _rate(prompt["loose"]),
        "inst_level_strict_acc": _rate(inst["strict"]),
        "inst_level_loose_acc": _rate(inst["loose"]),
        "by_group": {g: {m: _rate(d[m]) for m in ("strict", "loose")}
                     for g, d in sorted(by_group.items())},
        "by_instruction": {i: {m: _rate(d[m]) for m in ("strict", "loose")}
                           for i, d in sorted(by_id.items())},
        "n_samples": n_total, "n_scored": len(scored), "n_errors": len(errors),
        "error_rate": proportion(len(errors), n_total), "n_instructions": len(inst["strict"]),
        "checker_errors": checker_errors, "epochs": len({r.epoch for r in results}) or 1,
        **usage_summary(results), "top_errors": error_messages(results),
    }


def judge_row(flavor: str, response: str, row: dict[str, Any], *,
              nltk_data: str | None = None) -> list[Verdict]:
    """Verdicts of ``response`` on one data row, as the task scores it."""
    return judge_response(flavor, response, row["instruction_id_list"], row.get("kwargs"),
                          row.get("prompt", ""), nltk_data=nltk_data)


__all__ = ["DEFAULT_MAX_TOKENS", "InstructionOptions", "InstructionTask", "instruction_metrics",
           "judge_row", "read_rows", "scores_of"]
