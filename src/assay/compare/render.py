"""A comparison as terminal lines, ``compare.md``, ``compare.html`` and ``compare.json``
(written by :mod:`assay.reports.pages`, which escapes every string from data)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from assay.reports.pages import fmt_delta, fmt_num, fmt_p, write_pages
from assay.store.described import usd

#: flipped samples shown with both outputs per direction on the terminal
OUTPUTS_SHOWN = 5

__all__ = ["cost_text", "fmt_delta", "fmt_p", "one_line", "summary_lines", "write_comparison"]


def _test_name(result: dict[str, Any]) -> str:
    return ("McNemar exact test" if result["primary"]["test"] == "mcnemar_exact"
            else "paired bootstrap")


def cost_text(result: dict[str, Any]) -> str | None:
    """``cost: A $0.0100  B $0.0120  B-A +$0.0020`` ("unknown" where a price is, "—" for a
    run from before costs were kept); None when neither run kept its cost."""
    a, b, diff = result["a"].get("cost"), result["b"].get("cost"), result.get("cost_diff_usd")
    if a in (None, "—") and b in (None, "—"):
        return None
    return (f"cost: A {a}  B {b}  B-A "
            + ("unknown" if diff is None else ("-" if diff < 0 else "+") + usd(abs(diff))))


def one_line(text: str, width: int) -> str:
    """``text`` on one line of at most ``width`` characters (newlines as ``⏎``)."""
    flat = text.replace("\r\n", "\n").replace("\n", " ⏎ ").replace("\t", " ")
    return flat if len(flat) <= width else flat[: max(1, width - 1)] + "…"


def flip_lines(flip: dict[str, Any], width: int) -> list[str]:
    """A flipped sample's id and target, A's output, B's output."""
    head = f"  {flip['sample_id']}"
    if flip.get("target"):
        head += f"  target: {flip['target']}"
    return [one_line(head, width),
            one_line(f"    A: {flip.get('a_output', '')}", width),
            one_line(f"    B: {flip.get('b_output', '')}", width)]


def summary_lines(result: dict[str, Any], flips_shown: int = 10,
                  outputs_shown: int = OUTPUTS_SHOWN, width: int | None = None) -> list[str]:
    """The comparison as terminal lines: configuration, runs, table, then flips, the
    first ``outputs_shown`` of each direction with both outputs cut to ``width`` columns."""
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
    lines.append(f"{result['score']}: A {fmt_num(p['a'], kind)}  B {fmt_num(p['b'], kind)}  "
                 f"B-A {fmt_delta(p, kind)}  p={fmt_p(p['p_value'])} ({_test_name(result)}, "
                 f"n={p['n']})")
    if cost := cost_text(result):
        lines.append(cost)
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
            lines.append(f"  {row['name']}: n={row['n']}  A {fmt_num(row['a'], kind)}  "
                         f"B {fmt_num(row['b'], kind)}  B-A {fmt_delta(row, kind)}  "
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


def write_comparison(result: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    return write_pages(out_dir, "compare", {"r": result, "test_name": _test_name(result),
                                            "cost": cost_text(result)}, data=result)
