"""``assay batch status RUN``: the provider batches a ``--batch`` run sent, each as stored and,
while open, as its provider has it now (``--resume`` collects them)."""

from __future__ import annotations

import asyncio
from typing import Any

import click

from assay.errors import ConfigError
from assay.models.openai_batch import BatchClient
from assay.store.sqlite import Store


@click.command()
@click.argument("run_id")
@click.option("--api-key", envvar="OPENAI_API_KEY", default="", show_envvar=True,
              help="The provider's key, to ask where an open batch is (never stored).")
def status(run_id: str, api_key: str) -> None:
    """Each batch a run sent: its requests and where the provider has it."""
    store = Store()
    try:
        run = store.get_run(run_id)
    finally:
        store.close()
    records = run["stats"].get("batches") or []
    if not records:
        raise ConfigError(f"run {run['id']} sent no batch; batches are sent by runs started "
                          "with --batch")
    for rec in records:
        line = f"{rec['id']}  {rec['model']}  {rec['requests']} requests  {rec['status']}"
        if rec["status"] == "submitted" and rec.get("endpoint"):
            now = asyncio.run(_ask(rec["endpoint"], api_key, rec["id"]))
            counts = now.get("request_counts") or {}
            line += (f"; at the provider: {now.get('status')} ({counts.get('completed', 0)}/"
                     f"{counts.get('total', rec['requests'])} done, "
                     f"{counts.get('failed', 0)} failed)")
        click.echo(line)
    if any(rec["status"] == "submitted" for rec in records):
        click.echo(f"collect the answers with: assay run {run['spec'].get('task')} --resume "
                   f"{run['id']}")


async def _ask(endpoint: str, api_key: str, batch_id: str) -> dict[str, Any]:
    client = BatchClient(endpoint, api_key)
    try:
        return await client.status(batch_id)
    finally:
        await client.aclose()
