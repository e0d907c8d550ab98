"""The one-page summary of a run for a product owner: ``summary.md`` and ``summary.html``.

The full report (:mod:`assay.reports.render`) is for engineers; this page says in plain
words what was evaluated, the headline number with its 95% interval, the samples that
failed to run (apart, never counted as wrong), the strongest and weakest categories,
and how the run compares with the previous finished run of the same task and model.

It reads only the store (the metrics, headline and report data stored when the run
ended), like every report, and never a task's code. A run that has not finished has no
metrics: the page shows how many samples it evaluated and that the metrics are computed
when it finishes or is resumed. The HTML is
rendered with autoescaping and the Markdown with :func:`assay.reports.render.md_escape`
as ``finalize``, so every model, dataset or category string is inert text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.compare import compare_runs
from assay.compare.runs import data_hash, model_name
from assay.core.atomic import atomic_write_text
from assay.errors import AssayError
from assay.metrics.registry import get_metric
from assay.metrics.run import NOT_FINISHED_NOTE, stored_metrics
from assay.plan.report import SCALES
from assay.reports.render import _env, failure_line, is_rate
from assay.store.described import run_headline, run_report
from assay.store.fingerprint import configuration_of, differences, short_value
from assay.store.sqlite import Store

#: below this many samples a number (or a category) is marked "few samples"
FEW_SAMPLES = 30
#: an interval wider than this share of the scale on either side is "too wide to be sure"
WIDE_HALF_WIDTH = 0.10
#: the most strongest (and weakest) categories shown per breakdown
MAX_CATEGORIES = 3
#: metrics dicts that hold rates but are not categories (BFCL's combined scores)
NOT_CATEGORIES = frozenset({"aggregates"})
#: headline metrics whose rate is "answered correctly" (plus the registry's correctness)
CORRECTNESS_NAMES = frozenset({"accuracy", "exact_match_rate", "pass@1", "tolerant_accuracy"})


# -- how a value is shown -----------------------------------------------------------------
@dataclass(frozen=True)
class Scale:
    """How a metric's values are shown: ``percent`` (a rate on [0, 1]), ``scale`` (a mean on
    ``low``-``high``, e.g. a 1-10 judge score) or ``number`` (printed as is)."""

    kind: str
    low: float = 0.0
    high: float = 1.0

    @property
    def span(self) -> float | None:
        """The width of the scale (``None`` for a plain number)."""
        return None if self.kind == "number" else self.high - self.low


PERCENT = Scale("percent")
NUMBER = Scale("number")


def _registry_info(name: str) -> Any:
    """The registry's metadata for ``name`` (or an alias), ``None`` if it is not registered."""
    try:
        return get_metric(name)
    except AssayError:
        return None


def _known_scale(name: str, metrics: dict[str, Any]) -> tuple[float, float] | None:
    """A scale recorded for ``name``: the run's own ``metrics["scale"]`` (MT-Bench's 1-10),
    the registry's ``scale`` when it has one, or the plan report's table of scales."""
    own = metrics.get("scale")
    if (isinstance(own, (list, tuple)) and len(own) == 2
            and all(isinstance(x, (int, float)) for x in own)):
        return float(own[0]), float(own[1])
    info = _registry_info(name)
    names = [name] + ([info.name] if info is not None else [])
    scale = getattr(info, "scale", None) if info is not None else None
    if scale:
        return float(scale[0]), float(scale[1])
    for n in names:
        if n in SCALES:
            return SCALES[n]
    return None


def _rate_like_name(name: str) -> bool:
    info = _registry_info(name)
    return (name in CORRECTNESS_NAMES or name.endswith(("_rate", "_accuracy"))
            or name.startswith("pass@") or (info is not None and info.level == "sample"
                                            and info.dimension == "correctness"))


def value_scale(name: str, entry: dict[str, Any], metrics: dict[str, Any]) -> Scale:
    """How ``entry`` (a value of metric ``name`` in ``metrics``) is shown.

    A proportion (it has ``successes``) is a percentage. A metric on a known scale (the
    run's ``scale``, the registry's, e.g. 1-10 judge scores or 0-100 BLEU) is a number on
    that scale. A mean of a rate-like metric (accuracy, ``*_rate``, a correctness metric of
    the registry) whose value and interval lie in [0, 1] is a percentage. Anything else is
    printed as is: a number is never made a percentage on a guess.
    """
    if "successes" in entry:
        return PERCENT
    scale = _known_scale(name, metrics)
    if scale is not None and scale != (0.0, 1.0):
        return Scale("scale", *scale)
    values = [entry.get(k) for k in ("value", "ci_low", "ci_high")]
    in_unit = all(v is None or (isinstance(v, (int, float)) and -1e-9 <= v <= 1 + 1e-9)
                  for v in values)
    if in_unit and (scale == (0.0, 1.0) or _rate_like_name(name)):
        return PERCENT
    return NUMBER


def fmt_number(value: float, scale: Scale) -> str:
    """``62.0%`` for a rate, ``6.42`` on a scale, else 3 significant digits."""
    if scale.kind == "percent":
        return f"{value * 100:.1f}%"
    if scale.kind == "scale":
        return f"{value:.2f}"
    return f"{value:.3g}"


def fmt_interval(entry: dict[str, Any], scale: Scale) -> str:
    """``95% interval 55.1%–68.4%`` (empty when the entry has no interval)."""
    if entry.get("ci_low") is None or entry.get("ci_high") is None:
        return ""
    return (f"95% interval {fmt_number(entry['ci_low'], scale)}–"
            f"{fmt_number(entry['ci_high'], scale)}")


def fmt_with_interval(entry: dict[str, Any], scale: Scale, *, name_scale: bool = True) -> str:
    """``62.0% (95% interval 55.1%–68.4%)``; a scale is named (``name_scale``):
    ``6.42 on the 1–10 scale (...)``."""
    text = fmt_number(entry["value"], scale)
    if scale.kind == "scale" and name_scale:
        text += f" on the {scale.low:g}–{scale.high:g} scale"
    interval = fmt_interval(entry, scale)
    return f"{text} ({interval})" if interval else f"{text} (no interval: too few samples)"


def half_width(entry: dict[str, Any]) -> float | None:
    """The larger distance from the value to an end of its interval."""
    if entry.get("ci_low") is None or entry.get("ci_high") is None or entry.get("value") is None:
        return None
    return max(entry["value"] - entry["ci_low"], entry["ci_high"] - entry["value"])


def fmt_spread(entry: dict[str, Any], scale: Scale) -> str:
    """``±7 points`` for a rate, ``±0.31`` otherwise (empty with no interval); a lopsided
    interval (0 of 5 correct: 0%–43%) as the interval itself, since ``±43 points`` would
    claim values below 0."""
    half = half_width(entry)
    if half is None:
        return ""
    below, above = entry["value"] - entry["ci_low"], entry["ci_high"] - entry["value"]
    if min(below, above) < 0.5 * max(below, above):
        return fmt_interval(entry, scale)
    if scale.kind == "percent":
        points = half * 100
        return f"±{points:.0f} points" if points >= 1 else f"±{points:.1f} points"
    return f"±{fmt_number(half, scale)}"


def sample_count(entry: dict[str, Any]) -> int | None:
    """How many samples an entry rests on: its questions (MT-Bench pools two turns per
    question) or its ``n``."""
    for key in ("questions", "n"):
        if isinstance(entry.get(key), int):
            return int(entry[key])
    return None


def too_few(entry: dict[str, Any], scale: Scale) -> bool:
    """Whether a number rests on too little to be sure of: fewer than
    :data:`FEW_SAMPLES` samples, no interval, or an interval wider than
    :data:`WIDE_HALF_WIDTH` of the scale either side."""
    n = sample_count(entry)
    half = half_width(entry)
    if half is None or (n is not None and n < FEW_SAMPLES):
        return True
    span = scale.span
    return span is not None and half > WIDE_HALF_WIDTH * span


def _label(name: str) -> str:
    return name.replace("_", " ")


def _correctness(name: str) -> bool:
    info = _registry_info(name)
    return name in CORRECTNESS_NAMES or (info is not None and info.dimension == "correctness"
                                         and info.higher_is_better)


def _higher_is_better(name: str) -> bool:
    info = _registry_info(name)
    return True if info is None else bool(info.higher_is_better)


# -- the parts of the page ---------------------------------------------------------------
def headline_sentence(name: str, entry: dict[str, Any], scale: Scale) -> str:
    """The headline in a sentence: ``answered 124 of 200 correctly: 62.0% (95% interval
    55.1%–68.4%)``; other metrics by name, on their own scale."""
    shown = fmt_with_interval(entry, scale)
    if scale.kind == "percent" and "successes" in entry and _correctness(name):
        return f"answered {entry['successes']:,} of {entry['n']:,} correctly: {shown}"
    n = sample_count(entry)
    over = f", over {n:,} {'questions' if 'questions' in entry else 'samples'}" if n else ""
    if scale.kind == "percent" and "successes" in entry:
        over = f", {entry['successes']:,} of {entry['n']:,}"
    return f"{_label(name)}: {shown}{over}"


def short_headline(name: str, entry: dict[str, Any], scale: Scale) -> str:
    """The verdict's opening: ``62% correct (±7 points)``, ``6.4 out of 10 (±0.3)``."""
    v = entry["value"]
    if scale.kind == "percent":
        pct = f"{v * 100:.0f}%" if v >= 0.095 else f"{v * 100:.1f}%"
        text = f"{pct} correct" if _correctness(name) else f"{_label(name)} {pct}"
    elif scale.kind == "scale":
        text = (f"{v:.1f} out of {scale.high:g}" if scale.low in (0, 1)
                else f"{v:.1f} on the {scale.low:g}–{scale.high:g} scale")
        text = f"{_label(name)} {text}"
    else:
        text = f"{_label(name)} {fmt_number(v, scale)}"
    spread = fmt_spread(entry, scale)
    return f"{text} ({spread})" if spread else text


def _group_entry(value: Any, primary: str) -> dict[str, Any] | None:
    """A group's rate: itself, or (a group holding several rates) the primary's, else its
    first rate."""
    if is_rate(value):
        return value
    if isinstance(value, dict):
        if is_rate(value.get(primary)):
            return value[primary]
        return next((v for v in value.values() if is_rate(v)), None)
    return None


def _breakdown_title(key: str) -> str:
    if key.startswith("by_"):
        return _label(key[3:])
    if key == "categories":
        return "category"
    if key.endswith("_accuracy"):  # GAIA's level_accuracy
        return _label(key[: -len("_accuracy")])
    return _label(key)


def categories(metrics: dict[str, Any], primary: str) -> list[dict[str, Any]]:
    """Strongest and weakest groups of every breakdown with two groups or more.

    A breakdown is any metrics dict whose values are all rates (BFCL's ``categories``,
    GAIA's ``level_accuracy``, a gallery entry's ``by_<field>``), or groups holding
    rates (the primary's is used). At most :data:`MAX_CATEGORIES` each side, and never
    a group on both; a group on fewer than :data:`FEW_SAMPLES` samples is marked.
    """
    out = []
    better_high = _higher_is_better(primary)
    for key, groups in metrics.items():
        if key in NOT_CATEGORIES or not isinstance(groups, dict) or is_rate(groups) or not groups:
            continue
        entries = {str(g): _group_entry(v, primary) for g, v in groups.items()}
        if any(e is None for e in entries.values()):
            continue  # not a breakdown of rates
        rows = []
        for group, entry in entries.items():
            if entry is None or entry.get("value") is None:
                continue
            scale = value_scale(primary, entry, metrics)
            n = sample_count(entry)
            unit = "questions" if "questions" in entry else "samples"
            rows.append({"name": group, "value": entry["value"],
                         "text": fmt_with_interval(entry, scale, name_scale=False),
                         "size": "" if n is None else f"{n:,} {unit[:-1] if n == 1 else unit}",
                         "few": n is not None and n < FEW_SAMPLES})
        if len(rows) < 2:
            continue
        rows.sort(key=lambda r: r["value"], reverse=better_high)
        k = min(MAX_CATEGORIES, len(rows) // 2)
        scale = value_scale(primary, next(e for e in entries.values() if e), metrics)
        same = rows[0]["value"] == rows[-1]["value"]
        out.append({"title": _breakdown_title(key), "count": len(rows),
                    "scale": (f"{scale.low:g}–{scale.high:g} scale" if scale.kind == "scale"
                              else ""),
                    "same": fmt_number(rows[0]["value"], scale) if same else "",
                    "strongest": [] if same else rows[:k],
                    "weakest": [] if same else rows[::-1][:k]})
    return out


def previous_run(store: Store, run: dict[str, Any]) -> dict[str, Any] | None:
    """The latest finished run created before ``run``, of the same task and model (the
    model's name, as ``assay list runs`` shows it) and, where both record it, the same data.
    """
    model, digest = model_name(run), data_hash(run)
    for rid in reversed(store.runs_of(run["task"])):
        if rid == run["id"]:
            continue
        other = store.get_run(rid)  # the status a dead process left is read here
        if other["created_at"] >= run["created_at"]:
            continue
        if other["status"] != "finished" or model_name(other) != model:
            continue
        other_hash = data_hash(other)
        if digest and other_hash and other_hash != digest:
            continue
        return other
    return None


def comparison(store: Store, run: dict[str, Any], scale: Scale) -> dict[str, Any] | None:
    """The paired comparison with :func:`previous_run` (a = previous, b = this run), from
    :func:`assay.compare.compare_runs`; ``None`` when there is no previous run, no shared
    sample, or the comparison cannot be made (the page then leaves the line out)."""
    prev = previous_run(store, run)
    if prev is None:
        return None
    try:
        result = compare_runs(store, prev["id"], run["id"], outputs=False)
        primary = result["primary"]
        # the samples the test used: shared ids, less those errored or unscored in either
        shared = int(result["shared"]) - int(result.get("excluded") or 0)
        a, b, delta = float(primary["a"]), float(primary["b"]), float(primary["delta"])
        verdict = str(primary["verdict"])
    except Exception:  # noqa: BLE001 - a missing or failed comparison leaves the line out
        return None
    if shared == 0:
        return None
    low, high = primary.get("ci_low"), primary.get("ci_high")
    factor, unit, digits = (100.0, " points", ".1f") if scale.kind == "percent" else (
        1.0, "", ".2f" if scale.kind == "scale" else ".3g")

    def diff(x: float) -> str:  # signed, with a real minus sign
        return format(x * factor, "+" + digits).replace("-", "\u2212")

    change = {"B better": "a significant improvement", "B worse": "a significant drop"}.get(
        verdict, "no significant change")
    interval = (f", 95% interval {diff(float(low))} to {diff(float(high))}{unit}"
                if low is not None and high is not None else "")
    created = time.strftime("%Y-%m-%d", time.localtime(prev["created_at"]))
    better = verdict == "B better"
    # a change of settings, not of the model, may be what moved the number: say which
    diffs = differences(configuration_of(prev)["parts"], configuration_of(run)["parts"])
    differ = (" The two runs' configurations differ: " + "; ".join(
        f"{d['name']} {short_value(d['a'])} → {short_value(d['b'])}" for d in diffs) + "."
        if diffs else "")
    return {
        "previous_id": prev["id"],
        "previous_created": created,
        "shared": shared,
        "verdict": verdict,
        "change": change,
        "sentence": (f"Against the previous run of this task and model ({prev['id']}, "
                     f"{created}), on the {shared:,} samples both runs scored: "
                     f"{fmt_number(a, scale)} before, {fmt_number(b, scale)} now "
                     f"({diff(delta)}{unit}{interval}): {change}.{differ}"),
        "short": (f"no significant change from the previous run on {shared:,} shared samples"
                  if verdict not in ("B better", "B worse") else
                  f"significantly {'better' if better else 'worse'} than the previous run "
                  f"({diff(delta)}{unit} on {shared:,} shared samples)"),
        "warnings": [str(w) for w in result.get("warnings") or []],
    }


def status_note(run: dict[str, Any], evaluated: int) -> str:
    """A prominent line for a run that is not finished: its numbers are partial; or for a
    run that ran to its end but failed (every sample errored, or more than
    ``--max-error-rate``): its numbers are complete, and its most common error is said."""
    status = run["status"]
    if status == "finished":
        return ""
    if status == "failed" and stored_metrics(run) is not None:
        return (f"{failure_line(run)} Nothing is lost: 'assay run "
                f"{(run.get('spec') or {}).get('task') or run['task']} --resume {run['id']}' "
                "retries the samples that failed.")
    planned = (run.get("dataset") or {}).get("selected")
    epochs = int((run.get("spec") or {}).get("epochs") or 1)
    of = f" of {planned * epochs:,}" if isinstance(planned, int) else ""
    done = f"{evaluated:,}{of} samples"
    if status == "running":
        return (f"This run is still running: {done} have finished so far; its "
                f"{NOT_FINISHED_NOTE}.")
    why = ""
    if status == "failed" and (run.get("stats") or {}).get("error"):
        why = f" ({str(run['stats']['error'])[:200]})"
    return (f"This run {'was interrupted' if status == 'interrupted' else 'failed'}{why}: "
            f"only {done} were evaluated; its {NOT_FINISHED_NOTE}. Resume it with "
            f"'assay run {run['task']} --resume {run['id']}'.")


def _report_link(out: Path, default_dir: Path, run_id: str) -> dict[str, str]:
    """Where the full report is: beside the summary, in the run's folder, or not yet."""
    if (out / "report.html").exists():  # beside the summary: a relative link
        return {"href": "report.html", "md": "report.md", "missing": ""}
    html = default_dir / "report.html"
    if html.exists():
        return {"href": html.resolve().as_uri(), "md": str((default_dir / "report.md").resolve()),
                "missing": ""}
    return {"href": "", "md": "",
            "missing": f"The full report is not written yet: run 'assay report {run_id}'."}


def build_summary(store: Store, run_id: str, out_dir: Path | None = None) -> dict[str, Any]:
    """Everything the summary templates need, read from the store."""
    run = store.get_run(run_id)
    # the stored metrics and headline; a run stopped half way (or still running) has none
    # until it finishes: the page shows its counts and says so (see status_note)
    metrics = stored_metrics(run) or {}
    totals = store.sample_totals(run["id"])
    head = run_headline(run)
    evaluated = int(metrics.get("n_samples", totals["samples"]))
    errors = int(metrics.get("n_errors", totals["errors"]))
    model = run.get("model") or {}
    roles = [(role, str((info or {}).get("model")))
             for role, info in (model.get("roles") or {}).items()]
    partial = status_note(run, evaluated)
    ctx: dict[str, Any] = {
        "run": run,
        "task": run["task"],
        "description": str(run_report(run).get("description") or ""),
        "model_name": str(model.get("model")),
        "roles": roles,
        "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(run["created_at"])),
        "status": run["status"],
        "partial": partial,
        # a run that failed at its end has every number: it is not a partial result
        "partial_result": bool(partial) and not (run["status"] == "failed"
                                                 and stored_metrics(run) is not None),
        "evaluated": evaluated,
        "errors": errors,
        "errors_line": (f"{errors:,} {'sample' if errors == 1 else 'samples'} failed to run "
                        "(not counted as wrong)." if errors else ""),
        "unscored": int(metrics.get("n_unscored") or 0),
        "headline": None,
        "comparison": None,
        "categories": [],
    }
    unfinished = head is None and not metrics and run["status"] != "finished"
    ctx["no_headline"] = (f"No metrics yet: {NOT_FINISHED_NOTE}." if unfinished
                          else "No sample could be scored.")
    if unfinished:
        verdict = f"No metrics yet: {NOT_FINISHED_NOTE}"
    elif head is None:
        verdict = ("No sample could be scored" + (
            f": all {evaluated:,} failed to run" if errors and errors >= evaluated else ""))
    else:
        name, entry = head
        scale = value_scale(name, entry, metrics)
        few = too_few(entry, scale)
        sentence = headline_sentence(name, entry, scale)
        ctx["headline"] = {"name": name, "sentence": sentence[0].upper() + sentence[1:] + ".",
                           "few": few, "n": sample_count(entry)}
        ctx["comparison"] = comparison(store, run, scale)
        ctx["categories"] = categories(metrics, name)
        verdict = short_headline(name, entry, scale)
        if few:
            verdict += ", too few samples to be sure"
        if ctx["comparison"]:
            verdict += "; " + ctx["comparison"]["short"]
    if errors and head is not None:
        verdict += f"; {errors:,} {'sample' if errors == 1 else 'samples'} failed to run"
    if partial and run["status"] == "failed" and stored_metrics(run) is not None:
        verdict = f"The run failed: {verdict[0].lower()}{verdict[1:]}"
    elif partial:
        verdict = f"Partial result ({run['status']}): {verdict}"
    ctx["verdict"] = verdict[0].upper() + verdict[1:] + "."
    out = out_dir or store.runs_dir / run["id"]
    ctx["full_report"] = _report_link(out, store.runs_dir / run["id"], run["id"])
    return ctx


def write_summary(store: Store, run_id: str, out_dir: Path | None = None) -> dict[str, Path]:
    """Write ``summary.md`` and ``summary.html`` (in ``out_dir``, else the run's folder);
    returns their paths."""
    run = store.get_run(run_id)
    out = out_dir or store.runs_dir / run["id"]
    out.mkdir(parents=True, exist_ok=True)
    ctx = build_summary(store, run["id"], out)
    paths = {"summary_markdown": out / "summary.md", "summary_html": out / "summary.html"}
    atomic_write_text(paths["summary_markdown"],
                      _env(markdown=True).get_template("summary.md.j2").render(**ctx),
                      encoding="utf-8")
    atomic_write_text(paths["summary_html"], _env().get_template("summary.html").render(**ctx),
                      encoding="utf-8")
    return paths
