"""The report sections of a ``converse`` run: cases by score, points, and every chat
(stored results only)."""

from __future__ import annotations

from typing import Any

from assay.core.types import SampleResult
from assay.metrics.format import counted
from assay.tasks.converse.metrics import judge_of

MAX_CHATS = 200
CLIP = 3000


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def _clip(text: str) -> str:
    return text if len(text) <= CLIP else text[:CLIP] + f" [... {len(text) - CLIP} chars]"


def converse_report(metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
    """``{"sections", "recommendations"}`` for the generic report templates."""
    def key(r: SampleResult) -> tuple[float, str, int]:
        v = r.score_value("score")
        return (-1.0 if v is None else float(v), r.sample_id, r.epoch)

    ordered = sorted(results, key=key)
    case_rows = []
    for r in ordered:
        s = r.scores.get("score") or {}
        meta = s.get("metadata") or {}
        case_rows.append([r.sample_id, r.epoch, _fmt(r.score_value("score")),
                          _fmt(r.score_value("passed")), _fmt(meta.get("rounds")),
                          meta.get("ended_by") or "—", meta.get("invalid_points", "—"),
                          (r.error or "")[:200]])
    sections: list[dict[str, Any]] = [{
        "title": "Cases, lowest score first",
        "headers": ["case", "epoch", "score", "passed", "rounds", "ended by",
                    "invalid verdicts", "error"],
        "rows": case_rows,
    }]
    points = metrics.get("point_hit_rates") or []
    if points:
        sections.append({
            "title": "Scoring points",
            "note": "Hit rate over valid verdicts; invalid verdicts are counted apart and "
                    "never scored.",
            "headers": ["case", "point", "weight", "judge", "hit rate", "valid", "invalid"],
            "rows": [[p["case"], p["point"], f"{p['weight']:g}", p.get("kind") or "",
                      _fmt(p.get("rate")), p["valid"], p["invalid"]] for p in points],
        })
    for r in ordered[:MAX_CHATS]:
        meta = (r.outcome or {}).get("metadata") or {}
        conv = meta.get("conversation") or {}
        s = r.scores.get("score") or {}
        rows = (s.get("metadata") or {}).get("points") or []
        verdicts = [[p["point"], f"{p['weight']:g}",
                     "invalid" if p.get("invalid") else ("hit" if p.get("is_hit") else "miss"),
                     p.get("reason") or ""] for p in rows]
        chat = [{"role": m.get("role", ""), "text": _clip(str(m.get("content") or "")),
                 "tools": m.get("tools") or []} for m in conv.get("chat") or []]
        title = f"Case {r.sample_id}" + (f" · epoch {r.epoch}" if r.epoch else "")
        judge = judge_of(r)
        sections.append({
            "title": title,
            "note": (f"score {_fmt(r.score_value('score'))} · "
                     f"{counted(int(conv.get('rounds') or 0), 'round')} "
                     f"· ended by {conv.get('ended_by') or '—'}"
                     + (f" · judged by {judge}" if judge else "")
                     + (f" · agent error: {conv.get('agent_error')}" if conv.get('agent_error')
                        else "") + (f" · error: {r.error}" if r.error else "")),
            "chat": chat,
            "headers": ["scoring point", "weight", "verdict", "reason"] if verdicts else None,
            "rows": verdicts,
        })
    recs = []
    if metrics.get("eval_code_isolation") == "weak":
        recs.append("eval_code ran with weak isolation (no bubblewrap, --allow-weak-sandbox): "
                    "install it (apt-get install bubblewrap).")
    for role in metrics.get("same_model_as_agent") or []:
        recs.append(f"The {role} is the agent under test: give another with --{role}-model.")
    if metrics.get("invalid_verdicts"):
        recs.append(f"{counted(metrics['invalid_verdicts'], 'verdict')} came back invalid: "
                    "use a stronger judge or --judge-samples.")
    return {"sections": sections, "recommendations": recs}
