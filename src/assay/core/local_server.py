"""Serving a local web page (the review page, ``assay view``): bind, report, run until Ctrl-C."""

from __future__ import annotations

import asyncio
import errno
import signal
from collections.abc import Awaitable, Callable

from aiohttp import web

from assay.errors import ConfigError

__all__ = ["run_until_stopped", "start_site"]


async def start_site(app: web.Application, host: str, port: int) -> tuple[str, web.AppRunner]:
    """Start ``app`` on ``host:port`` (``port=0`` picks a free one); returns its base URL
    (``http://127.0.0.1:PORT/``) and the runner (``await runner.cleanup()`` stops it).

    A port in use, or one that cannot be bound, is a one-line :class:`ConfigError`.
    """
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as e:
        await runner.cleanup()
        if e.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is in use; choose another with --port "
                              "(0 picks a free one)") from e
        raise ConfigError(f"cannot listen on {host} port {port}: "
                          f"{e.strerror or type(e).__name__}; choose another with --port") from e
    except BaseException:
        await runner.cleanup()
        raise
    bound = runner.addresses[0][1]
    shown = "127.0.0.1" if host in ("localhost", "127.0.0.1") else host
    shown = f"[{shown}]" if ":" in shown and not shown.startswith("[") else shown
    return f"http://{shown}:{bound}/", runner


def run_until_stopped(start: Callable[[], Awaitable[web.AppRunner]]) -> None:
    """Run ``start()`` (which starts a site and says where) until SIGINT or SIGTERM, then
    clean the runner up; Ctrl-C never ends in a traceback."""

    async def main() -> None:
        runner = await start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError, ValueError):  # Windows, not main thread
                pass
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass

