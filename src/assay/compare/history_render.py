"""A task's history as terminal lines, ``history.md``, ``history.html`` (an SVG chart,
drops in red) and ``history.json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.metrics.format import counted, fmt_rate
from assay.reports.pages import fmt_p, write_pages
from assay.store.fingerprint import data_label

__all__ = ["configuration_lines", "history_context", "history_lines", "history_svg",
           "write_history"]

PALETTE = ("#1f6feb", "#8250df", "#bf8700", "#1a7f37", "#cf222e", "#57606a")


def _value(point: dict[str, Any]) -> str:
    m = point["metric"]
    if m is None or m.get("value") is None:
        return "n/a"
    return fmt_rate(m)


def _change_text(point: dict[str, Any]) -> str:
    c = point["change"]
    if c is None:
        return ""
    test = {"mcnemar_exact": "McNemar", "paired_bootstrap": "paired bootstrap",
            "fisher_exact": "Fisher, unpaired"}[c["test"]]
    text = f"{c['delta']:+.3f} (p={fmt_p(c['p_value'])}, {test}, n={c['shared'] or 'all'})"
    return ("DROP " if point["drop"] else "") + text


def _summary(parts: dict[str, Any]) -> str:
    """``qa · openai/x · scorer exact · data 6d4b23ea6676``."""
    bits = [str(parts.get("task")), str(parts.get("model"))]
    scorer = (parts.get("scorer") or {}).get("scorer")
    if scorer:
        bits.append(f"scorer {scorer}")
    if (parts.get("scorer") or {}).get("rescored"):
        bits.append("re-scored")
    gen = {k: v for k, v in (parts.get("generation") or {}).items() if k != "epochs"}
    bits += [f"{k} {v}" for k, v in gen.items()]
    if parts.get("data"):
        bits.append(f"data {data_label(parts['data'])}")
    return " · ".join(bits)


def configuration_lines(hist: dict[str, Any]) -> list[str]:
    """Which configuration the history shows, and the others with how they differ."""
    configs = hist.get("configurations") or []
    if hist.get("mixed"):
        lines = [f"mixing {counted(len(configs), 'configuration')}, each point marked "
                 "[fingerprint]:"]
        lines += [f"  [{c['fingerprint']}] {counted(c['runs'], 'run')}: {_summary(c['parts'])}"
                  + (f" ({c['rescored']})" if c.get("rescored") else "") for c in configs]
        return lines
    shown = next((c for c in configs if c["fingerprint"] == hist["fingerprint"]), None)
    if shown is None:
        return []
    lines = [f"configuration {shown['fingerprint']} ({counted(shown['runs'], 'run')}): "
             f"{_summary(shown['parts'])}"]
    others = [c for c in configs if c is not shown]
    if others:
        lines.append(f"{counted(len(others), 'other configuration')} not shown "
                     "(--fingerprint F to show one, --all to mix them):")
        lines += [f"  {c['fingerprint']} ({counted(c['runs'], 'run')}): "
                  + (f"{c['rescored']}; " if c.get("rescored") else "")
                  + c["text"].replace("same configuration except: ", "differs in ")
                  for c in others]
    return lines


def history_lines(hist: dict[str, Any]) -> list[str]:
    """Which configuration is shown, one line per run, oldest first, then the drops."""
    lines = [f"history of {hist['task']}" + (f" (model {hist['model']})" if hist["model"]
                                             else "")]
    lines += configuration_lines(hist)
    for p in hist["points"]:
        status = "" if p["status"] == "finished" else f" [{p['status']}: partial]"
        name = f"{p['metric_name']} " if p["metric_name"] else ""
        change = _change_text(p)
        mark = f"[{p['fingerprint']}]  " if hist.get("mixed") else ""
        cost = f"  cost {p['cost']}" if p["cost"] != "—" else ""
        lines.append(f"{p['created']}  {p['id']}  {mark}{p['model']}  {name}{_value(p)}{status}"
                     + cost
                     + (f"  vs previous {change}" if change else "")
                     + (f"  [{p['rescored']}]" if p.get("rescored") else ""))
    if hist["drops"]:
        lines.append(f"significant drops at alpha={hist['alpha']:g}: {', '.join(hist['drops'])}")
    else:
        lines.append(f"no significant drop at alpha={hist['alpha']:g}")
    return lines


def history_svg(hist: dict[str, Any], width: int = 760, height: int = 260) -> Any:
    """One point per run with its interval, a line per configuration; drops red."""
    from markupsafe import Markup, escape  # startup

    pts = [p for p in hist["points"] if p["metric"] and p["metric"].get("value") is not None]
    if not pts:
        return Markup("")
    highs = [p["metric"].get("ci_high") or p["metric"]["value"] for p in pts]
    lows = [p["metric"].get("ci_low") or p["metric"]["value"] for p in pts]
    top, bottom = max(highs), min(lows)
    if all(0.0 <= v <= 1.0 for v in (*highs, *lows)):
        top, bottom = 1.0, 0.0
    span = (top - bottom) or 1.0
    left, right, pad = 50, 20, 20
    n = len(hist["points"])

    def x(i: int) -> float:
        return left + (width - left - right) * (i + 0.5) / n

    def y(v: float) -> float:
        return pad + (height - 2 * pad) * (top - v) / span

    out = [f'<svg class="history" viewBox="0 0 {width} {height}" width="{width}" '
           f'height="{height}" role="img" aria-label="metric over time">',
           f'<line x1="{left}" y1="{y(bottom):.1f}" x2="{width - right}" y2="{y(bottom):.1f}" '
           'stroke="#99a"/>']
    for v in (bottom, (bottom + top) / 2, top):
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" font-size="11" '
                   f'text-anchor="end">{v:.2f}</text>')
    index = {p["id"]: i for i, p in enumerate(hist["points"])}
    for k, (fingerprint, members) in enumerate(hist["series"].items()):
        color = PALETTE[k % len(PALETTE)]
        named = hist["points"][members[0]].get("model") if members else None
        model = f"{fingerprint} {named}" if named else fingerprint
        seq = [hist["points"][i] for i in members if hist["points"][i] in pts]
        path = " ".join(f"{x(index[p['id']]):.1f},{y(p['metric']['value']):.1f}" for p in seq)
        if len(seq) > 1:
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}"/>')
        for p in seq:
            i, m = index[p["id"]], p["metric"]
            if m.get("ci_low") is not None:
                out.append(f'<line x1="{x(i):.1f}" y1="{y(m["ci_low"]):.1f}" x2="{x(i):.1f}" '
                           f'y2="{y(m["ci_high"]):.1f}" stroke="{color}" stroke-width="2"/>')
            fill = "#cf222e" if p["drop"] else color
            # a re-scoring: a ring, its title saying of which run and by what
            paint = (f'fill="#fff" stroke="{fill}" stroke-width="2"' if p.get("rescored")
                     else f'fill="{fill}"')
            note = f' ({escape(p["rescored"])})' if p.get("rescored") else ""
            out.append(f'<circle cx="{x(i):.1f}" cy="{y(m["value"]):.1f}" r="{6 if p["drop"] else 4}" '
                       f'{paint}><title>{escape(p["id"])} {escape(model)}: '
                       f'{escape(_value(p))}{note}</title></circle>')
        out.append(f'<text x="{left + 8}" y="{pad + 14 * (k + 1)}" font-size="11" '
                   f'fill="{color}">{escape(model)}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def history_context(hist: dict[str, Any]) -> dict[str, Any]:
    """The ``history`` page's context (history.html, history.md, the viewer's page)."""
    rows = [{**p, "value_text": _value(p), "change_text": _change_text(p)}
            for p in hist["points"]]
    return {"h": hist, "rows": rows, "chart": history_svg(hist),
            "config_lines": configuration_lines(hist)}


def write_history(hist: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    return write_pages(out_dir, "history", history_context(hist), data=hist)
