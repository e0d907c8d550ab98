"""The one-page summary of a run for a product owner: ``summary.md`` and ``summary.html``.

In plain words: what was evaluated, the headline with its 95% interval, samples that failed
to run (never counted as wrong), strongest and weakest categories, and the change from the
previous finished run of the task and model. Reads only the store, like every report."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.compare import compare_runs
from assay.compare.runs import data_hash, model_name
from assay.metrics.run import NOT_FINISHED_NOTE, stored_metrics
from assay.plan.report import SCALES
from assay.reports.pages import write_pages
from assay.reports.render import failure_line, is_rate
from assay.store.described import metric_fact, run_headline, run_report
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


@dataclass(frozen=True)
class Scale:
    """``percent`` (a rate on [0, 1]), ``scale`` (a mean on ``low``-``high``) or ``number``."""

    kind: str
    low: float = 0.0
    high: float = 1.0

    @property
    def span(self) -> float | None:
        return None if self.kind == "number" else self.high - self.low


PERCENT = Scale("percent")
NUMBER = Scale("number")


def _known_scale(name: str, metrics: dict[str, Any],
                 fact: dict[str, Any]) -> tuple[float, float] | None:
    """``metrics["scale"]`` (MT-Bench's 1-10), else the plan report's scale for the name."""
    own = metrics.get("scale")
    if (isinstance(own, (list, tuple)) and len(own) == 2
            and all(isinstance(x, (int, float)) for x in own)):
        return float(own[0]), float(own[1])
    return next((SCALES[n] for n in (name, fact.get("name")) if n in SCALES), None)


def _rate_like_name(name: str, fact: dict[str, Any]) -> bool:
    return (name in CORRECTNESS_NAMES or name.endswith(("_rate", "_accuracy"))
            or name.startswith("pass@")
            or (fact.get("level") == "sample" and fact.get("dimension") == "correctness"))


def value_scale(name: str, entry: dict[str, Any], metrics: dict[str, Any],
                fact: dict[str, Any] | None = None) -> Scale:
    """How metric ``name``'s ``entry`` is shown: a proportion, or a rate-like mean in
    [0, 1], as a percentage; a metric on a known scale on it; else as is (never a guessed %)."""
    if "successes" in entry:
        return PERCENT
    scale = _known_scale(name, metrics, fact or {})
    if scale is not None and scale != (0.0, 1.0):
        return Scale("scale", *scale)
    values = [entry.get(k) for k in ("value", "ci_low", "ci_high")]
    in_unit = all(v is None or (isinstance(v, (int, float)) and -1e-9 <= v <= 1 + 1e-9)
                  for v in values)
    if in_unit and (scale == (0.0, 1.0) or _rate_like_name(name, fact or {})):
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
    """``62.0% (95% interval 55.1%–68.4%)``; ``name_scale``: ``6.42 on the 1–10 scale (...)``."""
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
    """``±7 points`` for a rate, ``±0.31`` otherwise, only where the interval is symmetric
    as shown; an uneven one (Wilson's, mostly) as itself: ``95% interval 43.3%–81.9%``."""
    half = half_width(entry)
    if half is None:
        return ""
    below, above = entry["value"] - entry["ci_low"], entry["ci_high"] - entry["value"]
    if scale.kind == "percent":
        shown = [f"{x * 100:.0f}" if half * 100 >= 1 else f"{x * 100:.1f}" for x in (below, above)]
        spread = f"±{shown[1]} points"
    else:
        shown = [fmt_number(x, scale) for x in (below, above)]
        spread = f"±{shown[1]}"
    return spread if shown[0] == shown[1] else fmt_interval(entry, scale)


def sample_count(entry: dict[str, Any]) -> int | None:
    """The samples an entry rests on: its questions (MT-Bench: two turns each), or ``n``."""
    for key in ("questions", "n"):
        if isinstance(entry.get(key), int):
            return int(entry[key])
    return None


def too_few(entry: dict[str, Any], scale: Scale) -> bool:
    """Fewer than FEW_SAMPLES samples, no interval, or one wider than WIDE_HALF_WIDTH of scale."""
    n = sample_count(entry)
    half = half_width(entry)
    if half is None or (n is not None and n < FEW_SAMPLES):
        return True
    span = scale.span
    return span is not None and half > WIDE_HALF_WIDTH * span


def _label(name: str) -> str:
    return name.replace("_", " ")


def _capital(text: str, metric: str) -> str:
    """``text`` opening with a capital, unless it opens with the metric's name (kept as is)."""
    return text if metric and text.startswith(metric) else text[0].upper() + text[1:]


def _correctness(name: str, fact: dict[str, Any]) -> bool:
    return name in CORRECTNESS_NAMES or (fact.get("dimension") == "correctness"
                                         and bool(fact.get("higher_is_better")))


def headline_sentence(name: str, entry: dict[str, Any], scale: Scale,
                      fact: dict[str, Any]) -> str:
    """``answered 124 of 200 correctly: 62.0% (95% interval 55.1%–68.4%)``."""
    shown = fmt_with_interval(entry, scale)
    if scale.kind == "percent" and "successes" in entry and _correctness(name, fact):
        return f"answered {entry['successes']:,} of {entry['n']:,} correctly: {shown}"
    n = sample_count(entry)
    over = f", over {n:,} {'questions' if 'questions' in entry else 'samples'}" if n else ""
    if scale.kind == "percent" and "successes" in entry:
        over = f", {entry['successes']:,} of {entry['n']:,}"
    return f"{name}: {shown}{over}"  # the metric's one name, as every page shows it


def short_headline(name: str, entry: dict[str, Any], scale: Scale,
                   fact: dict[str, Any]) -> str:
    """The verdict's opening: ``62% correct (±7 points)``, ``6.4 out of 10 (±0.3)``."""
    v = entry["value"]
    if scale.kind == "percent":
        pct = f"{v * 100:.0f}%" if v >= 0.095 else f"{v * 100:.1f}%"
        text = f"{pct} correct" if _correctness(name, fact) else f"{name} {pct}"
    elif scale.kind == "scale":
        text = (f"{v:.1f} out of {scale.high:g}" if scale.low in (0, 1)
                else f"{v:.1f} on the {scale.low:g}–{scale.high:g} scale")
        text = f"{name} {text}"
    else:
        text = f"{name} {fmt_number(v, scale)}"
    spread = fmt_spread(entry, scale)
    return f"{text} ({spread})" if spread else text


def _group_entry(value: Any, primary: str) -> dict[str, Any] | None:
    """A group's rate: itself, else its ``primary`` rate, else its first rate."""
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


def categories(metrics: dict[str, Any], primary: str,
               fact: dict[str, Any]) -> list[dict[str, Any]]:
    """Strongest and weakest groups (at most MAX_CATEGORIES a side, none on both) of
    every breakdown: a metrics dict of rates, or of groups holding rates (the primary's used)."""
    out = []
    better_high = fact.get("higher_is_better", True)
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
            scale = value_scale(primary, entry, metrics, fact)
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
        scale = value_scale(primary, next(e for e in entries.values() if e), metrics, fact)
        same = rows[0]["value"] == rows[-1]["value"]
        out.append({"title": _breakdown_title(key), "count": len(rows),
                    "scale": (f"{scale.low:g}–{scale.high:g} scale" if scale.kind == "scale"
                              else ""),
                    "same": fmt_number(rows[0]["value"], scale) if same else "",
                    "strongest": [] if same else rows[:k],
                    "weakest": [] if same else rows[::-1][:k]})
    return out


def previous_run(store: Store, run: dict[str, Any]) -> dict[str, Any] | None:
    """The latest finished run before ``run`` of its task, model and (where both record it) data."""
    model, digest = model_name(run), data_hash(run)
    for rid in reversed(store.runs_of(run["task"])):
        if rid == run["id"]:
            continue
        other = store.get_run(rid)  # the status a dead process left is read here
        if (other["created_at"] >= run["created_at"] or other["status"] != "finished"
                or model_name(other) != model):
            continue
        other_hash = data_hash(other)
        if not (digest and other_hash and other_hash != digest):
            return other
    return None


def comparison(store: Store, run: dict[str, Any], scale: Scale) -> dict[str, Any] | None:
    """The paired comparison with :func:`previous_run` (a = previous); ``None`` when
    there is none, no shared sample, or it fails (the page leaves the line out)."""
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
        "previous_id": prev["id"], "previous_created": created, "shared": shared,
        "verdict": verdict, "change": change,
        "sentence": (f"Against the previous run of this task and model ({prev['id']}, "
                     f"{created}), on the {shared:,} samples both runs scored: "
                     f"{fmt_number(a, scale)} before, {fmt_number(b, scale)} now "
                     f"({diff(delta)}{unit}{interval}): {change}.{differ}"),
        "short": (f"no significant change from the previous run on {shared:,} shared samples"
                  if verdict not in ("B better", "B worse") else
                  f"significantly {'better' if better else 'worse'} than the previous run "
                  f"({diff(delta)}{unit} on {shared:,} shared samples)"),
        "warnings": [str(w) for w in result.get("warnings") or []]}


def status_note(run: dict[str, Any], evaluated: int) -> str:
    """A line for an unfinished run (its numbers are partial), or for one that failed at
    its end (its numbers are complete; its most common error is said)."""
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
        "run": run, "task": run["task"],
        "description": str(run_report(run).get("description") or ""),
        "model_name": str(model.get("model")), "roles": roles,
        "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(run["created_at"])),
        "status": run["status"], "partial": partial,
        # a run that failed at its end has every number: it is not a partial result
        "partial_result": bool(partial) and not (run["status"] == "failed"
                                                 and stored_metrics(run) is not None),
        "evaluated": evaluated, "errors": errors,
        "errors_line": (f"{errors:,} {'sample' if errors == 1 else 'samples'} failed to run "
                        "(not counted as wrong)." if errors else ""),
        "unscored": int(metrics.get("n_unscored") or 0),
        "headline": None, "comparison": None, "categories": []}
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
        fact = metric_fact(run_report(run).get("metric_facts"), name)
        scale = value_scale(name, entry, metrics, fact)
        few = too_few(entry, scale)
        sentence = headline_sentence(name, entry, scale, fact)
        ctx["headline"] = {"name": name, "sentence": _capital(sentence, name) + ".",
                           "few": few, "n": sample_count(entry)}
        ctx["comparison"] = comparison(store, run, scale)
        ctx["categories"] = categories(metrics, name, fact)
        verdict = short_headline(name, entry, scale, fact)
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
    ctx["verdict"] = _capital(verdict, name if head is not None else "") + "."
    out = out_dir or store.runs_dir / run["id"]
    ctx["full_report"] = _report_link(out, store.runs_dir / run["id"], run["id"])
    return ctx


def write_summary(store: Store, run_id: str, out_dir: Path | None = None) -> dict[str, Path]:
    """``summary.md`` and ``summary.html`` (in ``out_dir``, else the run's folder)."""
    run = store.get_run(run_id)
    out = out_dir or store.runs_dir / run["id"]
    pages = write_pages(out, "summary", build_summary(store, run["id"], out))
    return {f"summary_{name}": path for name, path in pages.items()}
