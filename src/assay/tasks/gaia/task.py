"""``gaia``: GAIA by the leaderboard's rules and official system prompt. Attachments by path,
text ones also inlined up to a limit; the test split's answers are private (submission only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.core.checks import check_number
from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.errors import ConfigError
from assay.tasks.base import LoadedData, Task, run_params_of
from assay.tasks.gaia.dataset import GAIA_REPO, load_gaia
from assay.tasks.gaia.export import write_submission
from assay.tasks.gaia.metrics import gaia_metrics
from assay.tasks.gaia.report import report_extra
from assay.tasks.gaia.scoring import extract_final_answer, get_scorer, partial_match
from assay.tasks.info import TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import task

# The leaderboard's answer-format prompt (Space content.py and the GAIA paper).
GAIA_SYSTEM_PROMPT = (
    "You are a general AI assistant. I will ask you a question. Report your thoughts, and "
    "finish your answer with the following template: FINAL ANSWER: [YOUR FINAL ANSWER]. "
    "YOUR FINAL ANSWER should be a number OR as few words as possible OR a comma separated "
    "list of numbers and/or strings. If you are asked for a number, don't use comma to write "
    "your number neither use units such as $ or percent sign unless specified otherwise. If "
    "you are asked for a string, don't use articles, neither abbreviations (e.g. for cities), "
    "and write the digits in plain text unless specified otherwise. If you are asked for a "
    "comma separated list, apply the above rules depending of whether the element to be put "
    "in the list is a number or a string."
)
TEXT_SUFFIXES = {".txt", ".csv", ".json", ".jsonl", ".md", ".py", ".xml"}
DEFAULT_INLINE_LIMIT = 20_000  # characters of an attachment put into the prompt


def attachment_text(path: Path, limit: int) -> str:
    note = f"\n\nAttached file: {path}"
    if path.suffix.lower() not in TEXT_SUFFIXES:
        return note + f" ({path.suffix.lstrip('.') or 'binary'} file; open it with your tools)"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        return note + f" (could not be read: {e.strerror})"
    cut = len(text) > limit
    body = text[:limit]
    tail = f"\n[... truncated: showing {limit} of {len(text)} characters]" if cut else ""
    return f"{note}\nContents of {path.name}:\n```\n{body}\n```{tail}"


class GAIAOptions(TaskOptions):
    data_dir: str | None = PathField(None, description="A local copy of gaia-benchmark/GAIA (either "
                                 "layout); otherwise it is downloaded with $HF_TOKEN.")
    split: str = Field("validation", description="validation or test (answers hidden).")
    level: int | None = Field(None, description="Only this level (1, 2 or 3).")
    scorer: str = Field("official", description="official (the leaderboard's rules) or lenient "
                        "(the book's, with its bugs fixed).")
    inline_limit: int | None = Field(None, description="Characters of a text attachment put "
                                     "into the prompt (default 20000).")
    system_prompt: str | None = Field(None, description="Replace the official GAIA system "
                                      "prompt (not leaderboard-comparable).")
    max_tokens: int | None = Field(None, description="Max tokens per reply (default 1024).")
    dataset_name: str | None = Field(None, description="Hugging Face dataset id (default "
                                     "gaia-benchmark/GAIA).")


@task("gaia")
class GAIATask(Task):
    """GAIA validation or test split, optionally one level."""

    headline_metric = "exact_match_rate"
    info = TaskInfo(category="agent", agent=True, agent_tools=("files", "python", "calculator"),
                    tags=("agent", "assistant", "tools", "web", "multimodal"),
                    aliases=("gaia_benchmark", "general_ai_assistants"),
                    runs_here="assay.tasks.gaia.dataset:runs_here")
    Options = GAIAOptions
    description = "GAIA general-assistant tasks (levels 1-3, attachments), official leaderboard scorer and submission file."

    opts: GAIAOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        o = self.opts
        if o.split not in ("validation", "test"):
            raise ConfigError(f"--split must be validation or test, got {o.split!r}")
        check_number("--max-tokens", o.max_tokens, minimum=1, integer=True)
        check_number("--inline-limit", o.inline_limit, minimum=0, integer=True)
        given = options.get("level")
        if o.level is not None and (isinstance(given, bool) or o.level not in (1, 2, 3)):
            raise ConfigError(f"--level must be 1, 2 or 3, got {given!r}")
        get_scorer(o.scorer)  # fail fast on a typo

    def read(self) -> LoadedData:
        o = self.opts
        data = load_gaia(o.data_dir, split=o.split, level=o.level,
                         dataset_name=o.dataset_name or GAIA_REPO)
        info = data.source_info()
        private = not info.get("answers_public", True)
        samples = []
        for t in data.tasks:
            meta: dict[str, Any] = {"level": t.level, "steps": t.steps,
                                    "file_name": t.file_name or None}
            if private:
                meta["answers_public"] = False
            samples.append(Sample(
                id=t.task_id, input=t.question, target=t.final_answer,
                files=[str(t.file_path)] if t.file_path else None, metadata=meta, row=t.raw,
            ))
        info = {**info, "split": o.split, "level": o.level, "scorer": o.scorer,
                "tasks": len(samples), "levels": data.level_distribution()}
        return LoadedData(samples, info, dict(self.options))

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        return {"max_tokens": int(self.opts.max_tokens or 1024), **run_params_of(ctx)}

    def build_messages(self, sample: Sample) -> list[Message]:
        system = self.opts.system_prompt or GAIA_SYSTEM_PROMPT
        question = sample.input if isinstance(sample.input, str) else ""
        path = Path(sample.files[0]) if sample.files else None
        if path is not None:
            given = self.opts.inline_limit
            limit = DEFAULT_INLINE_LIMIT if given is None else int(given)  # 0: inline nothing
            question += attachment_text(path, limit)
        return [Message("system", system), Message("user", question)]

    def agent_messages(self, sample: Sample, tools: tuple[str, ...]) -> list[Message]:
        """With an agent: the attachment by name, read with the tools (never inlined)."""
        system = self.opts.system_prompt or GAIA_SYSTEM_PROMPT
        question = sample.input if isinstance(sample.input, str) else ""
        if sample.files:
            where = [w for t, w in (("files", "the files tool reads it by name"),
                                    ("python", "it is in the python tool's working folder"),
                                    ("bash", "it is in the bash tool's working folder"))
                     if t in tools]
            question += (f"\n\nAttached file: {Path(sample.files[0]).name} ("
                         + ("; ".join(where) or "no tool of yours can read it") + ")")
        return [Message("system", system), Message("user", question)]

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        answer, method = extract_final_answer(outcome.output)
        meta = {"extraction": method, "level": sample.metadata.get("level"),
                "fallback": method not in ("final_answer", "none")}
        gold = sample.target
        if sample.metadata.get("answers_public") is False or gold in (None, "?"):
            # Test split: answers are private; the answer is kept for the submission only.
            return [Score("gaia", None, answer, "not scored: gold answers are private",
                          {**meta, "unscored": True})]
        matched = get_scorer(self.opts.scorer)(answer, str(gold))
        partial = partial_match(answer, str(gold))
        return [
            Score("gaia", 1.0 if matched else 0.0, answer,
                  "exact match" if matched else f"{answer!r} != {gold!r}",
                  {**meta, "scorer": self.opts.scorer}),
            Score("gaia_partial", 1.0 if partial else 0.0, answer,
                  "diagnostic only: never counted as correct", {"extraction": method}),
        ]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        return gaia_metrics(results, options or {})

    @classmethod
    def report_extra(cls, metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
        return report_extra(metrics)

    @classmethod
    def write_artifacts(cls, run: dict[str, Any], results: list[SampleResult],
                        out_dir: Any) -> dict[str, Any]:
        return write_submission(run, results, Path(out_dir))
