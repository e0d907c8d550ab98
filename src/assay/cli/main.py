"""The ``assay`` command line. An :class:`AssayError` prints one line and exits 2 (``--debug``:
the traceback); a usage error prints the short usage, then that ``error:`` line."""

from __future__ import annotations

import gc
import sys

import click

from assay.cli.app import STATE, app
from assay.core.redact import scrub
from assay.errors import AssayError

#: exit status of usage errors and of a group given no command (click's own)
USAGE_EXIT = 2


def usage_error_lines(e: click.UsageError) -> list[str]:
    """The short usage (for errors of shape, not of a value), then one ``error:`` line."""
    where = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
    message = scrub(" ".join(e.format_message().split()))
    lines = [f"error: {message}{where}"]
    bad_value = isinstance(e, click.BadParameter) and not isinstance(e, click.MissingParameter)
    # a task file's own error, handed on as a usage error (assay run FILE.yaml): one line
    from_content = isinstance(e.__context__, AssayError)
    if e.ctx is not None and not bad_value and not from_content:
        lines.insert(0, e.ctx.get_usage())
    return lines


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
    except click.exceptions.NoArgsIsHelpError as e:
        click.echo(e.ctx.get_help(), color=e.ctx.color)  # the help itself, not an error
        sys.exit(USAGE_EXIT)
    except click.UsageError as e:
        if STATE["debug"]:
            raise
        for line in usage_error_lines(e):
            click.echo(line, err=True)
        sys.exit(USAGE_EXIT)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    finally:
        # the process ends here: the interpreter's last collections would walk every object
        # of every loaded module (0.15 s after a run) only for exit to free them anyway
        gc.freeze()


if __name__ == "__main__":
    main()
