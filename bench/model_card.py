"""The embedded model against its model card: SmolLM2-135M-Instruct's published zero-shot
log-likelihood scores next to assay's, on the full validation sets the gallery ships.

Runs (or, with the same ``ASSAY_HOME``, finds in the response cache) ``assay run NAME --mc
loglikelihood --model local`` for HellaSwag, ARC-Easy, ARC-Challenge and PIQA, and prints
JSON: each entry's acc and acc_norm with 95% Wilson intervals, the card's figure (ARC is the
card's average of Easy and Challenge) and whether it lies inside the interval.

The card (lighteval, zero-shot, ``loglikelihood_acc_norm_nospace``, cloze, full precision,
the test splits where ARC has them) differs from this run in three ways to read the gaps by:
the weights (Q4_1 here), the normalisation (lighteval divides by the choice's length without
its leading space; lm-eval's acc_norm, used here, by the choice's text too, so the two agree
but for the space), and ARC's split (validation here, 570 + 299 questions).
Usage: ASSAY_HOME=DIR python bench/model_card.py [--limit N] [--sample 800]
"""

from __future__ import annotations

import argparse
import json
import random

#: SmolLM2-135M-Instruct's model card (reference/agents-scale-anchors.md), in percent
CARD = {"hellaswag": 40.9, "arc": 37.3, "piqa": 66.3}
ENTRIES = ("hellaswag", "arc_easy", "arc_challenge", "piqa")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=None, help="documents per entry (all)")
    ap.add_argument("--sample", type=int, default=None,
                    help="HellaSwag: this many documents drawn at random (seed 38), not all")
    args = ap.parse_args()
    import assay

    out: dict[str, object] = {"model": "local (SmolLM2-135M-Instruct Q4_1)",
                              "metric": "acc_norm (lm-eval)", "entries": {}}
    found: dict[str, dict[str, object]] = {}
    for name in ENTRIES:
        ids = None
        if name == "hellaswag" and args.sample:  # the README's 800: a seeded random draw
            from assay.tasks.registry import build_task

            every = [s.id for s in build_task(name, {}).load().samples]
            random.Random(38).shuffle(every)
            ids = sorted(every[:args.sample], key=every.index)
        result = assay.evaluate(name, model="local", mc="loglikelihood", limit=args.limit,
                                sample_ids=ids, quiet=True)
        m = result.metrics
        found[name] = {k: {"value": round(100 * m[k]["value"], 1),
                           "ci": [round(100 * m[k]["ci_low"], 1), round(100 * m[k]["ci_high"], 1)],
                           "n": m[k].get("n")} for k in ("acc", "acc_norm")}
    arc_n = [found[n]["acc_norm"]["n"] for n in ("arc_easy", "arc_challenge")]  # type: ignore[index]
    arc = (found["arc_easy"]["acc_norm"]["value"] + found["arc_challenge"]["acc_norm"]["value"]) / 2  # type: ignore[index]
    rows = {"hellaswag": found["hellaswag"], "piqa": found["piqa"],
            "arc_easy": found["arc_easy"], "arc_challenge": found["arc_challenge"]}
    for name, row in rows.items():
        card = CARD.get(name)
        ci = row["acc_norm"]["ci"]  # type: ignore[index]
        out["entries"][name] = {**row, "card": card,  # type: ignore[index]
                                "card_inside_interval": None if card is None
                                else ci[0] <= card <= ci[1]}
    out["entries"]["arc_average"] = {"acc_norm": round(arc, 1), "card": CARD["arc"],  # type: ignore[index]
                                     "n": arc_n}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
