"""The plan file: a human-readable, editable, versioned YAML evaluation plan. Every metric is in
the registry; an error is one line with the file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from assay.agents.tools import check_tools
from assay.core.atomic import atomic_write_text
from assay.core.yamlsafe import load_yaml, read_yaml_text
from assay.errors import ConfigError
from assay.metrics.registry import get_metric
from assay.plan.untrusted import check_task_ref
from assay.tasks.yaml_task import read_yaml_model, yaml_model_from_text

PLAN_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Budget(_Strict):
    """Quotas and limits the user stated; ``None`` means not stated (a default applies),
    ``0`` means zero, always."""

    #: at most this many tasks in the plan
    max_tasks: int | None = Field(None, ge=0)
    #: samples per task
    limit: int | None = Field(None, ge=0)
    #: tasks taken from the gallery by retrieval (named benchmarks are not counted)
    gallery: int | None = Field(None, ge=0)
    #: datasets taken from a Hugging Face Hub search
    hub: int | None = Field(None, ge=0)


class Intent(_Strict):
    domains: list[str] = Field(default_factory=list)
    capabilities: list[str] = Field(default_factory=list)
    benchmarks: list[str] = Field(default_factory=list)
    unknown_benchmarks: list[dict[str, Any]] = Field(default_factory=list)
    languages: list[str] = Field(default_factory=list)
    agent: bool | None = None
    budget: Budget = Field(default_factory=Budget)
    special_requests: list[str] = Field(default_factory=list)


class MetricChoice(_Strict):
    """One metric of a task: a registry name, its role, and why it was chosen."""

    name: str
    role: Literal["primary", "secondary", "diagnostic"] = "secondary"
    why: str = ""

    @field_validator("name")
    @classmethod
    def _registered(cls, v: str) -> str:
        try:
            return get_metric(v).name
        except ConfigError as e:
            raise ValueError(str(e)) from None


class HubRef(_Strict):
    """A Hugging Face Hub dataset, resolved (unverified: it runs as generic QA)."""

    id: str
    config: str | None = None
    split: str = "test"
    revision: str | None = None


class AgentChoice(_Strict):
    """The reference agent a task runs with: its built-in tools (no MCP command: a plan runs
    no program of its own)."""

    name: Literal["react"] = "react"
    tools: list[str] = Field(default_factory=list)

    @field_validator("tools")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        try:
            return check_tools(v)
        except ConfigError as e:
            raise ValueError(str(e)) from None

    def label(self) -> str:
        return f"the {self.name} agent (tools: {', '.join(self.tools) or 'none'})"


class PlanTask(_Strict):
    task: str
    source: Literal["gallery", "hub", "builtin"] = "gallery"
    options: dict[str, Any] = Field(default_factory=dict)
    limit: int | None = Field(None, ge=0)
    hub: HubRef | None = None
    capabilities: list[str] = Field(default_factory=list)
    metrics: list[MetricChoice] = Field(default_factory=list)
    why: dict[str, str] = Field(default_factory=dict)
    #: run with the reference agent and these tools (``None``: the model alone)
    agent: AgentChoice | None = None

    @field_validator("task")
    @classmethod
    def _not_a_file(cls, v: str) -> str:
        try:  # a FILE.py task would be imported: a plan runs no code of its own
            check_task_ref(v, "task")
        except ConfigError as e:
            raise ValueError(str(e).removeprefix("task: ")) from None
        return v

    @model_validator(mode="after")
    def _one_primary(self) -> PlanTask:
        primaries = [m.name for m in self.metrics if m.role == "primary"]
        # a plan before its metrics step has none; from then on, exactly one primary
        if self.metrics and len(primaries) != 1:
            raise ValueError(f"task {self.task}: exactly one metric has role primary "
                             f"(found {len(primaries)}: {', '.join(primaries) or 'none'})")
        if self.source == "hub" and self.hub is None:
            raise ValueError(f"task {self.task}: a hub task names its dataset (hub: {{id: ...}})")
        names = [m.name for m in self.metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"task {self.task}: a metric is listed twice")
        return self

    @property
    def primary(self) -> str | None:
        """The name of the primary metric (``None`` before the metrics step)."""
        return next((m.name for m in self.metrics if m.role == "primary"), None)

    @property
    def label(self) -> str:
        """What the task is called in reports (a Hub task by its dataset)."""
        return f"hub:{self.hub.id}" if self.hub else self.task


class Models(_Strict):
    """The models the plan runs: the model under test, a judge, and the planner used."""

    model: str = "local"
    judge: str | None = None
    planner: str = "rules"


class Plan(_Strict):
    """The schema of a plan file (see the module docstring)."""

    assay_plan: int = PLAN_VERSION
    request: str
    intent: Intent = Field(default_factory=Intent)
    models: Models = Field(default_factory=Models)
    tasks: list[PlanTask] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    trace: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("assay_plan")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != PLAN_VERSION:
            raise ValueError(f"this assay reads plan format {PLAN_VERSION}, not {v}")
        return v

    def without_trace(self) -> dict[str, Any]:
        """The plan as a dict, without its trace (what a run's identity depends on); a task
        with no agent says nothing of one, so a plan written before agents hashes as it did."""
        data = self.model_dump(exclude={"trace"}, mode="json")
        for task in data["tasks"]:
            if task.get("agent") is None:
                task.pop("agent", None)
        return data


def is_plan_file(path: str | Path) -> bool:
    """Whether ``path`` is a YAML file whose top level has the ``assay_plan`` key."""
    p = Path(path)
    if p.suffix not in (".yaml", ".yml") or not p.is_file():
        return False
    try:
        raw = load_yaml(read_yaml_text(p, "plan file"), p)
    except ConfigError:
        # a broken file that means to be a plan is read as one (its error names the line)
        try:
            with open(p, encoding="utf-8", errors="replace") as f:
                return "assay_plan" in f.read(4096)
        except OSError:
            return False
    return isinstance(raw, dict) and "assay_plan" in raw


def read_plan(path: str | Path) -> Plan:
    """A validated plan, read by the one safe YAML loader; one-line errors."""
    return read_yaml_model(Path(path), Plan, "plan file", default_where="plan")


def plan_from_text(text: str, where: str = "plan") -> Plan:
    """A validated plan from YAML text (an edited plan); one-line errors."""
    return yaml_model_from_text(text, Path(where), Plan, "plan",
                                mapping_hint=" (assay_plan, request, tasks)",
                                default_where="plan")


class _Dumper(yaml.SafeDumper):
    """Block style, long strings folded, keys in the schema's order."""


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)

HEADER = ("# An assay evaluation plan: edit it freely, then run it with\n"
          "#   assay run {name} --model MODEL [--limit N]\n"
          "# Every task has exactly one primary metric; metrics come from "
          "'assay list metrics'.\n")


def plan_to_text(plan: Plan, name: str = "plan.yaml") -> str:
    """The plan as YAML, with a header saying how to run it."""
    data = plan.model_dump(mode="json")
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return HEADER.format(name=name) + body


def write_plan(plan: Plan, path: str | Path) -> Path:
    """Write the plan atomically; returns its path."""
    p = Path(path)
    atomic_write_text(p, plan_to_text(plan, p.name))
    return p
