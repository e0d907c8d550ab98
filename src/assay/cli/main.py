"""The ``assay`` command line (typer + rich).

User errors (:class:`AssayError`) print one line and exit with status 2;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from assay.cli import bfcl as _bfcl  # noqa: F401  (registers commands)
from assay.cli import data as _data  # noqa: F401
from assay.cli import datagen as _datagen  # noqa: F401
from assay.cli import gaia as _gaia  # noqa: F401
from assay.cli import qa as _qa  # noqa: F401
from assay.cli.app import STATE, app, list_app
from assay.errors import AssayError, ConfigError


@app.command("report")
def report(
    run_id: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    out: Annotated[Path | None, typer.Option(help="Folder for the reports.")] = None,
) -> None:
    """Regenerate report.md, report.html and results.jsonl for a run from the store."""
    from assay.reports.render import write_reports
    from assay.store.sqlite import Store

    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the reports")
    store = Store()
    try:
        for kind, path in write_reports(store, run_id, out).items():
            typer.echo(f"{kind}: {path}")
    finally:
        store.close()


@list_app.command("runs")
def list_runs(limit: Annotated[int, typer.Option(help="How many runs.")] = 20) -> None:
    """Recent runs in the workspace store."""
    from rich.console import Console
    from rich.table import Table

    from assay.store.sqlite import Store

    store = Store()
    try:
        runs = store.list_runs(limit)
    finally:
        store.close()
    table = Table("run", "benchmark", "model", "status", "samples", "errors", "resumable",
                  "created")
    for col in (0, 7):
        table.columns[col].no_wrap = True
    for r in runs:
        table.add_row(r["id"], r["benchmark"], str(r["model"].get("model")), r["status"],
                      str(r["samples"]), str(r["errors"]), "yes" if r["resumable"] else "",
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created_at"])))
    Console().print(table)
    if any(r["resumable"] for r in runs):
        typer.echo("resume a run with: assay run <benchmark> --resume <run>")


@list_app.command("benchmarks")
def list_benchmarks() -> None:
    """Benchmarks that can be run."""
    from assay.benchmarks.base import available_benchmarks, get_benchmark_class

    for name in available_benchmarks():
        typer.echo(f"{name:12s} {get_benchmark_class(name).description}")


@list_app.command("models")
def list_models() -> None:
    """Model providers and how to name them."""
    typer.echo("local                      embedded SmolLM2-135M-Instruct (Q4_1) via llama.cpp")
    typer.echo("local/<path.gguf>          any GGUF file, run in process")
    typer.echo("openai/<model>             any OpenAI-compatible endpoint (--base-url)")
    typer.echo("python/<module>:<factory>  a Python agent with run(prompt) -> str")


def main() -> None:
    """Console-script entry point: one line and exit 2 on user errors."""
    try:
        # Without standalone mode click returns (not raises) the code of typer.Exit.
        rc = app(standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except AssayError as e:
        if STATE["debug"]:
            raise
        typer.echo(f"error: {e}", err=True)
        sys.exit(2)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("aborted", err=True)
        sys.exit(130)
    except Exception as e:  # click usage errors and friends
        # typer may vendor its own click, so the classes are recognised by name
        kinds = {c.__name__ for c in type(e).__mro__}
        if "UsageError" in kinds and not STATE["debug"]:
            # one line, like every other user error; the command's --help has the rest
            ctx = getattr(e, "ctx", None)
            where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
            message = " ".join(e.format_message().split())  # type: ignore[attr-defined]
            typer.echo(f"error: {message}{where}", err=True)
            sys.exit(2)
        if "ClickException" in kinds:
            e.show()  # type: ignore[attr-defined]
            sys.exit(e.exit_code)  # type: ignore[attr-defined]
        raise


if __name__ == "__main__":
    main()
