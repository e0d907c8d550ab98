"""``assay view``: browse the workspace's runs in a local, read-only web page."""

from __future__ import annotations

import click

from assay.web.server import launch


@click.command("view")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 to serve on; 0 picks a free one.")
@click.option("--no-browser", is_flag=True, help="Print the address without opening a browser.")
def view(port: int, no_browser: bool) -> None:
    """Browse runs, metrics and transcripts in a local web page.

    Serves the workspace store on 127.0.0.1 only, read-only, so it is safe while runs are
    going: runs, a run's metrics and samples, one sample's transcript, a task's history,
    the paired comparison of two runs. The workspace is found as git finds .git:
    $ASSAY_HOME if set, else the nearest assay-runs/ holding assay.db in this folder or
    one above it. Ctrl-C stops.
    """
    launch(port=port, open_browser=not no_browser, echo=click.echo)
