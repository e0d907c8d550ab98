"""``assay tau2 score``: official τ²-bench result files scored by the official evaluator."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import click

from assay.core import workers
from assay.core.atomic import atomic_open
from assay.tasks.tau2 import data, worker
from assay.tasks.tau2.metrics import is_success


@click.command("score")
@click.option("--results", type=click.Path(path_type=Path), required=True,
              help="An official results file (tau2 run's JSON, or one assay exported: "
              "tau2_results.json beside a run's reports).")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None,
              help="Write one verdict per simulation here (JSONL: simulation_id, task_id, "
              "trial, reward, reward_breakdown, db_match, termination_reason).")
@click.option("--tau2-dir", type=click.Path(path_type=Path), default=None,
              help="A folder holding the tau2 package (default: what 'assay data pull tau2' "
              "fetched).")
def score(results: Path, output: Path | None, tau2_dir: Path | None) -> None:
    """Score official-format result files with the official evaluator.

    No model is run: the official compute_simulation_rewards scores each simulation."""
    source = data.locate(tau2_dir)
    rows = workers.run_bounded(worker.kind_for(source.root), worker.score_results,
                               worker.setup(source.root), str(results.resolve()),
                               timeout=3600)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(output) as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    ok = sum(1 for r in rows if r["reward"] is not None and is_success(r["reward"]))
    ended = Counter(r["termination_reason"] for r in rows)
    mean = sum(r["reward"] or 0.0 for r in rows) / len(rows) if rows else 0.0
    click.echo(f"{len(rows)} simulations · mean reward {mean:.3f} · success {ok}/{len(rows)} "
               f"· ended by " + ", ".join(f"{k} {v}" for k, v in sorted(ended.items())))
    if output:
        click.echo(f"verdicts: {output}")
