"""The planner on the hand-written requests of ``tests/plan/requests.yaml`` (45, written
with the planner), ``tests/plan/requests_heldout.yaml`` (25, written by someone who had
not read its rules) and the frozen field set of issue 25, ``requests_field.yaml`` (132,
written without reading the planner, with the field's canonical tasks per capability),
both ways.

For the rules-and-BM25 planner (no model) and the embedded model as planner
(``--planner local``, or any model spec), every request is planned offline with every
checkpoint approved, every distinct task of the plans is smoke-run once (one sample
through the real engine against the fake OpenAI-compatible server; gallery data from
the tests' fixture wheels), and the three rates of One-Eval's Table 1 are printed as
JSON: plans that execute, named-benchmark recall, domain recall@5, with the seconds
per plan and every miss. On the field set the rates are executable, named recall,
capability recall@5, canonical coverage and unavailable said, overall and by the
request's style. The rules path is the baseline measured in the same run.

Usage: python bench/plan_quality.py [--planner local] [--rules-only]
                                    [--set field|own|heldout|all]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--planner", default="local", help="The planner model to compare.")
    parser.add_argument("--rules-only", action="store_true", help="Only the rules path.")
    parser.add_argument("--set", default="all",
                        choices=["field", "field2", "own", "heldout", "all"],
                        help="The request set: own (requests.yaml), heldout, field "
                             "(issue 25's frozen set), field2 (issue 40's) or all.")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="assay-plan-bench-")
    os.environ["ASSAY_HOME"] = home
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.pop("OPENAI_API_KEY", None)
    sys.path.insert(0, str(REPO))
    from assay.testing.fake_server import FakeServer
    from tests.plan import quality

    server = FakeServer().start()
    smoked: dict[str, dict[str, object]] = {}
    out = []
    sets = {"own": [quality.REQUESTS], "heldout": [quality.HELDOUT],
            "field": [quality.FIELD], "field2": [quality.FIELD2]}.get(
        args.set, [quality.REQUESTS, quality.HELDOUT, quality.FIELD, quality.FIELD2])
    try:
        for path in sets:
            for planner in [None] if args.rules_only else [None, args.planner]:
                folder = Path(tempfile.mkdtemp(dir=home))
                if path in (quality.FIELD, quality.FIELD2):
                    requests, capabilities = quality.load_field(path)
                else:
                    requests, capabilities = quality.load_requests(path), None
                plans = quality.make_plans(requests, folder, planner=planner)
                quality.smoke(plans, server.base_url, smoked)
                rates = quality.rates(plans, smoked) if capabilities is None else \
                    quality.field_rates(plans, smoked, capabilities)
                out.append({"set": path.name, "planner": planner or "rules", **rates})
    finally:
        server.stop()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
