"""The report sections of a ``tau2`` run: scores beside the user simulator they were earned
with, pass^k, failures by component and termination, tokens per role, and each failed
trial's three-party transcript with its database differences (stored results only)."""

from __future__ import annotations

from typing import Any

from assay.core.types import SampleResult

MAX_TRANSCRIPTS = 100
CLIP = 600


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def _clip(text: Any) -> str:
    s = "" if text is None else str(text)
    return s if len(s) <= CLIP else s[:CLIP] + f" [... {len(s) - CLIP} chars]"


def _rate(m: dict[str, Any] | None) -> str:
    if not m or m.get("value") is None:
        return "—"
    ci = (f" [{m['ci_low']:.3f}, {m['ci_high']:.3f}]" if m.get("ci_low") is not None else "")
    return f"{m['value']:.3f}{ci} (n={m.get('n')})"


def explain(info: dict[str, Any], termination: Any, diff: list[dict[str, Any]] | None) -> str:
    """A trial's verdict in words: the reward, each component, the termination reason and,
    for a failed DB check, where the agent's database differs from the gold one."""
    lines = [f"reward {info.get('reward')}; ended by {termination}"]
    for name, value in (info.get("reward_breakdown") or {}).items():
        lines.append(f"  {name}: {value}")
    note = (info.get("info") or {}).get("note")
    if note:
        lines.append(f"  {note}")
    for check in info.get("action_checks") or []:
        if not check.get("action_match"):
            a = check.get("action") or {}
            lines.append(f"  action not matched: {a.get('name')}({a.get('arguments')})")
    for check in info.get("communicate_checks") or []:
        if not check.get("met"):
            lines.append(f"  not told to the user: {check.get('info')}")
    for check in info.get("env_assertions") or []:
        if not check.get("met"):
            lines.append(f"  assertion not met: {(check.get('env_assertion') or {}).get('func_name')}")
    for check in info.get("nl_assertions") or []:
        if not check.get("met"):
            lines.append(f"  NL assertion not met: {check.get('nl_assertion')}")
    if diff:
        lines.append("  database differences (gold → agent):")
        lines += [f"    {d['path']}: {_clip(d.get('gold'))} → {_clip(d.get('agent'))}"
                  for d in diff]
    return "\n".join(lines)


def tau2_report(metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
    """``{"sections", "recommendations"}`` for the generic report templates."""
    users = ", ".join(metrics.get("user_models") or []) or "—"
    head = [["domain", metrics.get("domain") or "—"], ["user simulator", users],
            ["mean reward", _rate(metrics.get("reward"))],
            ["success rate", _rate(metrics.get("success_rate"))]]
    head += [[k, _rate(v)] for k, v in metrics.items() if k.startswith("pass^")]
    sections: list[dict[str, Any]] = [{
        "title": "τ²-bench",
        "note": "Earned with the user simulator named here: a score with another user "
                "simulator is comparable only in a paired comparison (assay compare).",
        "headers": ["", ""], "rows": head}]
    comps = metrics.get("failed_components") or {}
    if comps:
        sections.append({"title": "Failures by reward component",
                         "headers": ["component", "failed", "checked"],
                         "rows": [[k, v["failed"], v["checked"]] for k, v in comps.items()]})
    ended = metrics.get("termination_reasons") or {}
    if ended:
        sections.append({"title": "Termination reasons", "headers": ["reason", "trials"],
                         "rows": [[k, v] for k, v in ended.items()]})
    tokens = metrics.get("tokens_by_role") or {}
    if tokens:
        sections.append({"title": "Tokens by role",
                         "headers": ["role", "input", "output"],
                         "rows": [[k, v["input"], v["output"]] for k, v in tokens.items()]})
    failed = [r for r in results if r.error is None and (r.score_value("reward") or 0) < 1]
    for r in failed[:MAX_TRANSCRIPTS]:
        sim = ((r.outcome or {}).get("metadata") or {}).get("simulation") or {}
        rows = []
        for m in sim.get("messages") or []:
            said = m.get("content")
            calls = "; ".join(f"{c['name']}({c.get('arguments')})" for c in
                              m.get("tool_calls") or [])
            rows.append([m.get("turn_idx", ""), m["role"], _clip(said or calls)])
        score = (r.scores or {}).get("reward") or {}
        sections.append({"title": f"Task {r.sample_id}, trial {r.epoch}",
                         "note": score.get("explanation") or "",
                         "headers": ["turn", "from", "message or tool calls"], "rows": rows})
    return {"sections": sections, "recommendations": []}
