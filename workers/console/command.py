"""``council console``: serve the console on uvicorn, bound to 127.0.0.1 by default.

It needs ``COUNCIL_CONSOLE_TOKEN`` (exit 2 naming it when unset or short) and the
council's Redis (``COUNCIL_REDIS_URL`` or ``--redis``: exit 2 without one, 3 when it
does not answer). Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

import ipaddress
import threading
from types import FrameType

import click

from workers.cli.context import CliContext, UsageProblem

DEFAULT_PORT = 8722
"""The port the console listens on unless ``--port`` says otherwise."""

SHUTDOWN_S = 2
"""Seconds uvicorn waits for open event streams when stopped, before closing them."""


@click.command("console")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port to listen on (0: any free one).",
)
@click.pass_obj
def console_command(cli: CliContext, host: str, port: int) -> None:
    """Serve a web page that shows the runs Redis holds, live, and answers what they ask.

    Needs COUNCIL_CONSOLE_TOKEN (a long random secret) and COUNCIL_REDIS_URL. Open the
    console once with ?token=TOKEN (it keeps a session cookie), or send
    "Authorization: Bearer TOKEN". Answering a question there is `council answer`; the
    run settles when its last question is answered.

    \b
    Examples:
      export COUNCIL_CONSOLE_TOKEN="$(openssl rand -hex 32)"
      council console
      # then open http://127.0.0.1:8722/?token=$COUNCIL_CONSOLE_TOKEN
    """
    from workers.console.security import (
        Access,
        ConsoleSettings,
        TokenMissing,
        console_token,
    )

    try:
        token = console_token(ConsoleSettings())
    except TokenMissing as missing:
        raise UsageProblem(str(missing)) from None
    rt = cli.runtime()
    import uvicorn

    from workers.console.app import create_app

    stopping = threading.Event()
    app = create_app(rt, Access(token), stopping=stopping)
    if not _loopback(host):
        click.echo(
            f"council: the console listens on {host}, beyond this machine, over plain HTTP: "
            "the token crosses the network in clear; put TLS in front of it",
            err=True,
        )
    shown = f"[{host}]" if ":" in host else host
    click.echo(
        f"council: console on http://{shown}:{port}/ — open it once with "
        "?token=$COUNCIL_CONSOLE_TOKEN (Ctrl-C stops it)",
        err=True,
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=SHUTDOWN_S,
    )

    class Server(uvicorn.Server):
        """uvicorn's server, telling the console's event streams to end when stopped."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            stopping.set()
            super().handle_exit(sig, frame)

    Server(config).run()


def _loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
