"""A comparison as text: the terminal lines, ``compare.md``, ``compare.html``, ``compare.json``.

Every run name, sample id and category comes from data and is escaped: HTML by Jinja's
autoescape, Markdown by the reports' ``md_escape`` finalizer.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_write_text
from assay.reports.render import _env as report_env

#: the comparison's and the history's own templates, found before the reports' ones
TEMPLATES = Path(__file__).parent / "templates"
#: flipped samples shown with both outputs per direction on the terminal
OUTPUTS_SHOWN = 5

__all__ = ["fmt_delta", "fmt_p", "one_line", "summary_lines", "write_comparison"]


def fmt_p(p: float | None) -> str:
    """A p-value as reports show it: four places, or three significant digits below 0.001."""
    if p is None:
        return "n/a"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.4f}"


def _num(v: float | None, kind: str) -> str:
    if v is None:
        return "n/a"
    return f"{v:.3f}" if kind == "binary" or abs(v) < 10 else f"{v:.2f}"


def fmt_delta(row: dict[str, Any], kind: str = "binary") -> str:
    """``+0.125 [+0.071, +0.176]``: the difference B - A with its interval."""
    s = f"{row['delta']:+.3f}"
    if row.get("ci_low") is not None:
        s += f" [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
    return s


def _test_name(result: dict[str, Any]) -> str:
    return ("McNemar exact test" if result["primary"]["test"] == "mcnemar_exact"
            else "paired bootstrap")


def one_line(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` characters (newlines as ``⏎``)."""
    flat = text.replace("\r\n", "\n").replace("\n", " ⏎ ").replace("\t", " ")
    return flat if len(flat) <= width else flat[: max(1, width - 1)] + "…"


def flip_lines(flip: dict[str, Any], width: int) -> list[str]:
    """A flipped sample in three lines: its id and target, A's output, B's output."""
    head = f"  {flip['sample_id']}"
    if flip.get("target"):
        head += f"  target: {flip['target']}"
    return [one_line(head, width),
            one_line(f"    A: {flip.get('a_output', '')}", width),
            one_line(f"    B: {flip.get('b_output', '')}", width)]


def summary_lines(result: dict[str, Any], flips_shown: int = 10,
                  outputs_shown: int = OUTPUTS_SHOWN, width: int | None = None) -> list[str]:
    """The comparison in plain lines (the terminal's output): how B's configuration
    differs from A's, the runs, the table, then the flipped samples, the first
    ``outputs_shown`` of each direction with both outputs cut to ``width`` columns
    (the terminal's width when ``None``)."""
    a, b, p = result["a"], result["b"], result["primary"]
    kind = result["kind"]
    width = width or shutil.get_terminal_size((100, 24)).columns
    lines = []
    if result.get("configuration"):
        c = result["configuration"]
        lines.append(f"configuration: {c['text']}" + ("" if c["same"] else
                     f" (fingerprints {c['a']} -> {c['b']})"))
    lines += [f"{k}: {r['id']}  {r['task']}  {r['model']}  ({r['created']}, {r['status']})"
              + (f"  {r['headline']}" if r.get("headline") else "")
              for k, r in (("A", a), ("B", b))]
    lines += [f"warning: {w}" for w in result["warnings"]]
    lines.append(f"{result['shared']} shared samples ({result['only_a']} only in A, "
                 f"{result['only_b']} only in B); {result['excluded']} of them left out "
                 "(errored or unscored in either run)")
    lines.append(f"{result['score']}: A {_num(p['a'], kind)}  B {_num(p['b'], kind)}  "
                 f"B-A {fmt_delta(p, kind)}  p={fmt_p(p['p_value'])} ({_test_name(result)}, "
                 f"n={p['n']})")
    if result.get("contingency"):
        c = result["contingency"]
        lines.append(f"fixed by B: {c['b_only_pass']}  broken by B: {c['a_only_pass']}  "
                     f"both pass: {c['both_pass']}  both fail: {c['both_fail']}")
    lines.append(f"verdict at alpha={p['alpha']:g}: {p['verdict']}")
    cats = result["categories"]
    if cats["rows"]:
        lines.append(f"by {cats['field']}:")
        for row in cats["rows"]:
            flag = "  *" if row["p_holm"] is not None and row["p_holm"] < p["alpha"] else ""
            lines.append(f"  {row['name']}: n={row['n']}  A {_num(row['a'], kind)}  "
                         f"B {_num(row['b'], kind)}  B-A {fmt_delta(row, kind)}  "
                         f"p={fmt_p(row['p_value'])} (Holm {fmt_p(row['p_holm'])}){flag}")
    for key, label in (("fixed", "better in B" if kind != "binary" else "fixed by B"),
                       ("broken", "worse in B" if kind != "binary" else "broken by B")):
        flips = result["flips"][key]
        if flips:
            shown = ", ".join(f["sample_id"] for f in flips[:flips_shown])
            more = f" (+{len(flips) - flips_shown} more)" if len(flips) > flips_shown else ""
            lines.append(f"{label} ({len(flips)}): {shown}{more}")
            if outputs_shown and "a_output" in flips[0]:
                for f in flips[:outputs_shown]:
                    lines += flip_lines(f, width)
                if len(flips) > outputs_shown:
                    lines.append(f"  ... {len(flips) - outputs_shown} more with both outputs "
                                 "in compare.md and compare.html")
    return lines


def _env(markdown: bool) -> Any:
    from jinja2 import ChoiceLoader, FileSystemLoader  # startup

    env = report_env(markdown=markdown)
    env.loader = ChoiceLoader([FileSystemLoader(str(TEMPLATES)), env.loader])
    env.filters["p"] = fmt_p
    env.filters["delta"] = fmt_delta
    env.filters["num"] = _num
    env.filters["setting"] = lambda v: "unset" if v is None else (
        v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str))
    return env


def write_page_set(out_dir: Path, stem: str, ctx: dict[str, Any],
                   data: dict[str, Any]) -> dict[str, Path]:
    """``<stem>.md`` and ``<stem>.html`` from the ``<stem>.md.j2``/``<stem>.html``
    templates over ``ctx``, and ``<stem>.json`` holding ``data``, in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out_dir / f"{stem}.md", "html": out_dir / f"{stem}.html",
             "json": out_dir / f"{stem}.json"}
    atomic_write_text(paths["markdown"],
                      _env(True).get_template(f"{stem}.md.j2").render(**ctx), encoding="utf-8")
    atomic_write_text(paths["html"],
                      _env(False).get_template(f"{stem}.html").render(**ctx), encoding="utf-8")
    atomic_write_text(paths["json"], json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                      encoding="utf-8")
    return paths


def write_comparison(result: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    """Write ``compare.md``, ``compare.html`` and ``compare.json`` into ``out_dir``."""
    ctx = {"r": result, "test_name": _test_name(result)}
    return write_page_set(out_dir, "compare", ctx, result)
