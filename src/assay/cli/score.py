"""``assay score RUN``: a stored run's samples scored again, as a new run, with no call to
the model under test."""

from __future__ import annotations

import click

from assay.cli.report import existing_store
from assay.errors import ConfigError
from assay.metrics.format import counted, fmt_rate
from assay.reports.render import write_reports
from assay.rescore import rescore
from assay.store.described import cost_line, run_cost, run_headline
from assay.tasks.options import parse_assignments


@click.command("score")
@click.argument("run_id")
@click.option("--scorer", default=None,
              help="Score with this scorer instead (e.g. lenient on a GAIA run; exact, "
              "normalized, numeric, ... on a qa run).")
@click.option("-T", "--task-option", "task_option", multiple=True, metavar="KEY=VALUE",
              help="Change a task option that only affects scoring; repeatable.")
@click.option("--judge-model", multiple=True, metavar="MODEL",
              help="Judge the stored outputs again with this model (the tasks with a judge: "
              "MT-Bench, converse, rubric, win rate); repeat it for a jury. The model under "
              "test is never called.")
@click.option("--judge-base-url", default=None, metavar="URL",
              help="The judge's endpoint (default: ASSAY_JUDGE_BASE_URL, else the provider's: "
              "OPENAI_BASE_URL, then OpenAI); never the endpoint of the model under test. Its "
              "key: ASSAY_JUDGE_API_KEY, else OPENAI_API_KEY.")
@click.option("--no-report", is_flag=True, help="Do not write the new run's reports.")
def score(run_id: str, scorer: str | None, task_option: tuple[str, ...],
          judge_model: tuple[str, ...], judge_base_url: str | None, no_report: bool) -> None:
    """Score a stored run again, with no call to the model under test.

    RUN_ID: its id or a unique prefix. The new scores are a new run linked to it; a judged
    task's judge is asked again (from the response cache when it is the same judge)."""
    store = existing_store(run_id, readonly=False)
    try:
        record = store.get_run(run_id)
        if record["kind"] != "task":
            raise ConfigError(f"run {record['id']} is a {record['kind']} run, with no samples of "
                              "its own; score one of its child runs (see 'assay list runs')")
        done = rescore(store, record["id"], scorer=scorer,
                       options=parse_assignments(task_option),
                       judge_model=(None if not judge_model else judge_model[0]
                                    if len(judge_model) == 1 else list(judge_model)),
                       judge_base_url=judge_base_url)
        run = store.get_run(done.run_id)
        judged = (f"; {done.judge_calls} calls to {', '.join(done.judges)} "
                  f"({done.judge_cache_hits} answered by the response cache)"
                  if done.judges else "")
        click.echo(f"run {done.run_id} scores run {done.parent_id} again: "
                   f"{counted(done.rescored, 'sample')} scored, {counted(done.errors, 'error')}, "
                   "no call to the model under "
                   f"test{judged}")
        head = run_headline(run)  # stored with the new run when it was finalized
        if head:
            click.echo(f"{head[0]}: {fmt_rate(head[1])}")
        elif (run.get("metrics") or {}).get("unscored_note"):
            click.echo(f"not scored: {run['metrics']['unscored_note']}")
        if done.verdicts_note and not done.failed:
            click.echo(done.verdicts_note)
        cost = cost_line(run_cost(run)) if done.judges else None
        if cost:  # what the judges' calls cost (the model's were paid by the run)
            click.echo(cost)
        if not no_report:
            for kind, path in write_reports(store, done.run_id).items():
                click.echo(f"{kind}: {path}")
    finally:
        store.close()
    if done.failed:  # no verdict at all: a failed run, never a number
        click.echo(f"run {done.run_id} failed: {done.verdicts_note}", err=True)
        raise SystemExit(1)
