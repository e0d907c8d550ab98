"""Plans that know the field: each capability's tasks ranked by :data:`PRIOR_WEIGHT` x their
standing's prior + the rest x their normalised BM25 score; the reason records both."""

from __future__ import annotations

from typing import Any

from assay.plan.retrieve import Candidate, retriever, said
from assay.tasks.capabilities import CAPABILITIES, PRIOR, capabilities_in
from assay.tasks.registry import catalogue

__all__ = ["PRIOR_WEIGHT", "canonical_set", "capabilities_in", "capability_candidates",
           "measures_of"]

#: the weight of the field's prior in a candidate's score (the words get the rest)
PRIOR_WEIGHT = 0.6


def measures_of(name: str) -> dict[str, Any]:
    """A runnable task's declared measures, by capability (empty when it declares none)."""
    listed = catalogue().get(name)
    return {m.capability: m for m in listed.info.measures} if listed is not None else {}


def capability_candidates(request: str, capability: str, *,
                          suggested: frozenset[str] = frozenset(),
                          embed: dict[str, float] | None = None,
                          planner: str | None = None) -> list[Candidate]:
    """Every runnable task that measures ``capability``, best first; ``embed`` (name -> cosine
    to the request) is averaged into the words' part."""
    cap = CAPABILITIES[capability]
    tasks = {n: m for n, listed in catalogue().items() for m in listed.info.measures
             if m.capability == capability}
    if not tasks:
        return []
    words = f"{request} {' '.join(p for p in cap.phrases if p.isascii())}"
    scored = {d.name: (s, matched, d.source) for d, s, matched in retriever().scores(words)
              if d.name in tasks}
    top = max((s for s, _, _ in scored.values()), default=0.0)
    # why this capability: the request's own phrases that name it (none: the planner's reading)
    phrases = capabilities_in(request)[1].get(capability) or []
    phrases = [p for p in phrases if not any(p != q and p in q for q in phrases)]
    asked = (f"; it measures {capability}, which the request names ("
             + ", ".join(f'"{p}"' for p in phrases) + ")") if phrases else ""
    out = []
    for name, m in tasks.items():
        bm25, matched, source = scored.get(name, (0.0, [], "gallery"))
        norm = bm25 / top if top > 0 else 0.0
        words_said = said(request, matched)
        reason = (f"prior {m.standing} for {capability} ({m.why}); BM25 {bm25:.2f} "
                  f"({norm:.2f} of the best); {words_said}{asked}")
        if embed is not None:
            cos = max(0.0, embed.get(name, 0.0))
            norm = (norm + cos) / 2
            reason += f"; embedding cosine {cos:.2f}"
        score = PRIOR_WEIGHT * PRIOR[m.standing] + (1 - PRIOR_WEIGHT) * norm
        chosen = {"prior": f"{m.standing} for {capability}: {m.why}",
                  "words": f"BM25 {bm25:.2f}, {norm:.2f} of the best ({words_said})",
                  "model": ("no planner model (rules)" if planner is None else
                            f"suggested by {planner}" if name in suggested
                            else f"not among {planner}'s suggestions")}
        if name in suggested:
            reason += "; the planner model suggested it"
        out.append(Candidate(name, score, bm25, m.standing != "niche", reason,
                             capability, source, matched, chosen, m.standing))
    out.sort(key=lambda c: (-c.score, c.name))
    return out


def canonical_set(candidates: list[Candidate]) -> list[Candidate]:
    """A capability's canonical candidates in rank order (its best one when it has none)."""
    canon = [c for c in candidates if c.standing == "canonical"]
    return canon or candidates[:1]
