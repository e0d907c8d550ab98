"""Metric values and counts as text, for every layer that prints them."""

from __future__ import annotations

from typing import Any


def fmt_rate(value: dict[str, Any]) -> str:
    """``0.650 [0.433, 0.819] (13/20)`` for a rate entry."""
    if value.get("value") is None:
        return "n/a"
    s = f"{value['value']:.3f}"
    if value.get("ci_low") is not None:
        s += f" [{value['ci_low']:.3f}, {value['ci_high']:.3f}]"
    if "successes" in value:
        s += f" ({value['successes']}/{value['n']})"
    elif value.get("n") is not None:
        s += f" (n={value['n']})"
    return s


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 task``, ``2 tasks``: a count and its noun, agreeing (``plural`` when irregular)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def by_name(counts: dict[str, Any] | None) -> str:
    """``calculator 2, think 1``: counts (or other plain values) by name, in one line."""
    return ", ".join(f"{k} {v}" for k, v in (counts or {}).items())


def _mean(value: dict[str, Any] | None) -> str:
    if not value or value.get("value") is None:
        return "n/a"
    if value.get("ci_low") is None:
        return f"{value['value']:.2f}"
    return f"{value['value']:.2f} [{value['ci_low']:.2f}, {value['ci_high']:.2f}]"


def agent_section(metrics: dict[str, Any]) -> dict[str, Any] | None:
    """The report section of a run whose model ran with an agent (``None``: it did not):
    steps and tool calls per sample, calls per tool, tool errors, why the samples ended."""
    agent = metrics.get("agent")
    if not isinstance(agent, dict):
        return None
    rows = [["steps (model calls) per sample", _mean(agent.get("steps_per_sample"))],
            ["tool calls per sample", _mean(agent.get("tool_calls_per_sample"))],
            ["tool errors", str(agent.get("tool_errors", 0))],
            ["calls per tool", by_name(agent.get("calls_per_tool")) or "none"],
            ["how samples ended", by_name(agent.get("ended"))]]
    if agent.get("tool_calls_minus_annotator_steps"):
        rows.append(["tool calls minus the annotators' steps",
                     _mean(agent["tool_calls_minus_annotator_steps"])])
    return {"title": "Agent", "headers": ["", "value (mean [95% CI])"], "rows": rows,
            "note": "The model ran with an agent and tools: the score is the model with this "
                    "agent. A sample ends when the model answers or a limit is reached."}
