"""Compare two stored runs on their shared samples (``assay compare``, the viewer's page).

A sample's score is the mean of its scored epochs; one errored or unscored in either run is
``excluded``, never a failure. Pass/fail scores get McNemar's exact test, others a paired
bootstrap. Task, data or scorer differences are a warning; the configuration change is
said first (:mod:`assay.store.fingerprint`)."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from assay.compare.flips import attach_outputs
from assay.compare.paired import holm, paired_binary, paired_continuous
from assay.errors import ConfigError
from assay.metrics.format import fmt_rate
from assay.reports.values import cost_cell
from assay.scoring import ALIASES
from assay.store.described import run_cost, run_headline
from assay.store.fingerprint import data_hash as dataset_hash
from assay.store.fingerprint import differences, differences_text

if TYPE_CHECKING:
    from assay.store.sqlite import Store

__all__ = ["CATEGORY_FIELDS", "RunScores", "compare_runs", "load_scores"]

#: metadata fields tried, in order, when no ``by`` is given (BFCL, GAIA, gallery entries)
CATEGORY_FIELDS = ("category", "level", "subject", "subcategory", "difficulty", "type", "task")


class RunScores:
    """One run's per-sample values of one score, with what identifies the run."""

    def __init__(self, run: dict[str, Any], score: str | None) -> None:
        self.run = run
        #: sample id -> mean of its scored epochs
        self.values: dict[str, float] = {}
        #: sample id -> its first epoch's metadata over its dataset row (categories)
        self.metadata: dict[str, dict[str, Any]] = {}
        #: sample ids whose every epoch errored or went unscored
        self.unscored: set[str] = set()
        #: the score names the run's samples carry, in first-seen order
        self.score_names: list[str] = []
        self.score: str | None = score

    def info(self) -> dict[str, Any]:
        r = self.run
        return {"id": r["id"], "task": r["task"], "model": model_name(r),
                "created_at": r["created_at"],
                "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created_at"])),
                "status": r["status"], "n_samples": len(self.values) + len(self.unscored),
                "data_hash": data_hash(r), "scorer": self.score,
                "headline": headline_text(r), "fingerprint": r["config"]["fingerprint"],
                # null: a price unknown, or a run from before costs were kept ("—")
                "cost_usd": (run_cost(r) or {}).get("usd"), "cost": cost_cell(r),
                "configuration": r["config"]["parts"]}


def headline_text(run: dict[str, Any]) -> str | None:
    """``accuracy 0.650 [0.433, 0.819] (13/20)`` from the stored headline; None without."""
    head = run_headline(run)
    return f"{head[0]} {fmt_rate(head[1])}" if head else None


def model_name(run: dict[str, Any]) -> str:
    """The model a run evaluated, as ``assay list runs`` names it."""
    model = run.get("model") or {}
    return str(model.get("model") if isinstance(model, dict) else model)


def data_hash(run: dict[str, Any]) -> str | None:
    """The content hash of the data a run evaluated, where its task records one."""
    return dataset_hash(run.get("dataset"))


def configuration_change(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Both fingerprints and how ``b``'s configuration differs from ``a``'s."""
    diffs = differences(a["config"]["parts"], b["config"]["parts"])
    return {"a": a["config"]["fingerprint"], "b": b["config"]["fingerprint"],
            "same": not diffs, "differences": diffs, "text": differences_text(diffs)}


def load_scores(store: Store, run_id: str, score: str | None = None) -> RunScores:
    """Per-sample values of ``score`` (``None``: the primary, i.e. first, score; a scorer's
    alias, ``exact``, names its metric, ``exact_match``)."""
    run = store.get_run(run_id)
    out = RunScores(run, score)
    alias = ALIASES.get(score) if score is not None else None
    per: dict[str, list[float]] = defaultdict(list)
    seen: list[str] = []
    names: dict[str, None] = {}
    for sid, _epoch, errored, scores, fields in store.iter_score_rows(run["id"]):
        if sid not in out.metadata:
            out.metadata[sid] = fields
            seen.append(sid)
        if errored or not scores:
            continue
        for name in scores:
            names.setdefault(name)
        entry = scores.get(score or next(iter(scores))) or scores.get(alias or "")
        value = entry.get("value") if isinstance(entry, dict) else None
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, (int, float)) and value == value:  # NaN: unscored
            per[sid].append(float(value))
    out.score_names = list(names)
    if score is None and out.score_names:
        out.score = out.score_names[0]
    elif score is not None and score not in names and alias in names:
        out.score = alias
    elif score is not None and score not in names and names:
        raise ConfigError(f"run {run['id']} has no score {score!r}; its scores are "
                          f"{', '.join(out.score_names)}")
    for sid in seen:
        if per.get(sid):
            out.values[sid] = sum(per[sid]) / len(per[sid])
        else:
            out.unscored.add(sid)
    return out


def _differences(a: RunScores, b: RunScores, shared: int, only_a: int, only_b: int
                 ) -> str | None:
    """One warning line naming every way the two runs are not like for like."""
    parts = []
    ta, tb = a.run["task"], b.run["task"]
    if ta != tb:
        parts.append(f"tasks ({ta} vs {tb})")
    ha, hb = data_hash(a.run), data_hash(b.run)
    if ha and hb and ha != hb:
        parts.append(f"data hashes ({ha[:12]} vs {hb[:12]})")
    sa = (a.run["spec"].get("task_options") or {}).get("scorer")
    sb = (b.run["spec"].get("task_options") or {}).get("scorer")
    if a.score != b.score or sa != sb:
        parts.append(f"scorers ({a.score}{'/' + str(sa) if sa else ''} vs "
                     f"{b.score}{'/' + str(sb) if sb else ''})")
    if not parts and not (only_a or only_b):
        return None
    what = f"the runs differ in {', '.join(parts)}; " if parts else ""
    return (f"{what}comparing only the {shared} shared sample ids "
            f"({only_a} only in A, {only_b} only in B)")


def _category_field(by: str | None, metas: list[dict[str, Any]]) -> str | None:
    if by:
        return by
    for field in CATEGORY_FIELDS:
        have = sum(1 for m in metas if m.get(field) not in (None, ""))
        if metas and have * 2 >= len(metas):
            values = {str(m.get(field)) for m in metas}
            if 1 < len(values) < len(metas) or len(metas) < 4 and len(values) > 1:
                return field
    return None


def compare_runs(store: Store, a: str, b: str, *, score: str | None = None,
                 by: str | None = None, alpha: float = 0.05, resamples: int = 10000,
                 seed: int = 0, outputs: bool = True) -> dict[str, Any]:
    """The paired comparison of run ``b`` against ``a``, JSON-ready; ``by``: the
    category field (default: the first of CATEGORY_FIELDS that splits the samples); ``outputs``:
    give flips both outputs. A ConfigError when they share no scored sample."""
    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha must be between 0 and 1, not {alpha}")
    ra, rb = load_scores(store, a, score), load_scores(store, b, score)
    ids_a = set(ra.values) | ra.unscored
    ids_b = set(rb.values) | rb.unscored
    shared_ids = [sid for sid in ra.metadata if sid in ids_b]
    only_a, only_b = len(ids_a - ids_b), len(ids_b - ids_a)
    paired = [sid for sid in shared_ids if sid in ra.values and sid in rb.values]
    excluded = len(shared_ids) - len(paired)
    warning = _differences(ra, rb, len(shared_ids), only_a, only_b)
    if not paired:
        raise ConfigError(
            f"runs {ra.run['id']} and {rb.run['id']} share no scored sample "
            f"({len(shared_ids)} shared ids, {excluded} errored or unscored in either run); "
            "compare runs of the same data")
    va = [ra.values[s] for s in paired]
    vb = [rb.values[s] for s in paired]
    binary = all(v in (0.0, 1.0) for v in (*va, *vb))

    def test(x: list[float], y: list[float]) -> dict[str, Any]:
        if binary:
            return paired_binary(x, y, alpha=alpha)
        return paired_continuous(x, y, alpha=alpha, resamples=resamples, seed=seed)

    primary = test(va, vb)
    contingency = primary.pop("contingency", None)
    field = _category_field(by, [ra.metadata[s] for s in paired])
    rows = []
    if field:
        groups: dict[str, list[int]] = defaultdict(list)
        for i, sid in enumerate(paired):
            meta = ra.metadata[sid] or rb.metadata.get(sid) or {}
            groups[str(meta.get(field, "(none)"))].append(i)
        for name, idx in sorted(groups.items()):
            res = test([va[i] for i in idx], [vb[i] for i in idx])
            res.pop("contingency", None)
            rows.append({"name": name, **res})
        for row, adj in zip(rows, holm([r["p_value"] for r in rows]), strict=True):
            row["p_holm"] = adj
    fixed, broken = [], []
    for sid, x, y in zip(paired, va, vb, strict=True):
        if y > x:
            fixed.append({"sample_id": sid, "a": x, "b": y})
        elif y < x:
            broken.append({"sample_id": sid, "a": x, "b": y})
    if not binary:  # the largest changes first
        fixed.sort(key=lambda f: f["a"] - f["b"])
        broken.sort(key=lambda f: f["b"] - f["a"])
    a_info, b_info = ra.info(), rb.info()
    costs = (a_info["cost_usd"], b_info["cost_usd"])
    result = {
        "a": a_info, "b": b_info, "score": ra.score if ra.score == rb.score else
        f"{ra.score} / {rb.score}",
        "cost_diff_usd": None if None in costs else round(costs[1] - costs[0], 8),
        "configuration": configuration_change(ra.run, rb.run),
        "kind": "binary" if binary else "continuous",
        "shared": len(shared_ids), "only_a": only_a, "only_b": only_b, "excluded": excluded,
        "warnings": [warning] if warning else [],
        "primary": primary, "contingency": contingency,
        "categories": {"field": field, "rows": rows},
        "flips": {"fixed": fixed, "broken": broken}}
    if outputs:
        attach_outputs(store, result)
    return result
