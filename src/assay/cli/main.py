"""The ``assay`` command line (click; ``rich`` for tables).

User errors (:class:`AssayError`) print one line and exit with status 2;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import sys

import click

from assay.cli.app import STATE, app
from assay.core.redact import scrub
from assay.errors import AssayError


def main() -> None:
    """Console-script entry point: one line and exit 2 on user errors."""
    try:
        # Without standalone mode click returns (not raises) the code of ctx.exit(n).
        rc = app.main(standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except AssayError as e:
        if STATE["debug"]:
            raise
        click.echo(f"error: {scrub(str(e))}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except (click.Abort, KeyboardInterrupt):
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.UsageError as e:
        if STATE["debug"]:
            raise
        # one line, like every other user error; the command's --help has the rest
        where = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
        message = scrub(" ".join(e.format_message().split()))
        click.echo(f"error: {message}{where}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)


if __name__ == "__main__":
    main()
