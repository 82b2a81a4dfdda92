"""``council worker``: a Celery worker with the council's app, queues and threads pool."""

from __future__ import annotations

import click

from workers.celery_config import ALL_QUEUES
from workers.cli.context import CliContext, Incomplete, UsageProblem


@click.command(
    "worker", context_settings={"ignore_unknown_options": True, "allow_extra_args": True}
)
@click.option(
    "--queues",
    "-Q",
    default=",".join(ALL_QUEUES),
    show_default=True,
    help=(
        "Comma-separated queues to consume; a name without a dot means council.NAME "
        "(--queues openai,consolidate). Some worker must consume council.consolidate."
    ),
)
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(min=1),
    help="Reviewer threads (default: COUNCIL_WORKER_THREADS, 16).",
)
@click.option("--hostname", "-n", help="Worker node name (default: celery@HOST).")
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def worker_command(
    cli: CliContext,
    queues: str,
    concurrency: int | None,
    hostname: str | None,
    celery_args: tuple[str, ...],
) -> None:
    """Run a council worker on COUNCIL_REDIS_URL (any number of hosts may).

    Extra arguments go to ``celery worker`` as they are. ``celery -A workers.celery_app
    worker`` works too.

    \b
    Example:
      COUNCIL_REDIS_URL=redis://localhost:6379/0 council worker -c 32
    """
    if not cli.distributed:
        raise UsageProblem(
            "council worker needs a broker: set COUNCIL_REDIS_URL or pass --redis URL "
            "(embedded mode needs no worker: council review runs one inside itself)"
        )
    cli.runtime()  # exit 3 within 5 s, URL redacted, when Redis cannot be reached
    from workers import celery_config

    app = celery_config.create_app(cli.settings)
    argv = [
        "worker",
        "--pool=threads",
        f"--concurrency={concurrency or cli.settings.worker_threads}",
        f"--queues={_queue_names(queues)}",
        f"--loglevel={cli.log_level.upper()}",
    ]
    if hostname:
        argv.append(f"--hostname={hostname}")
    argv.extend(celery_args)
    try:
        app.worker_main(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise Incomplete(f"the celery worker exited with status {exc.code}") from None


def _queue_names(text: str) -> str:
    """``openai,consolidate`` → ``council.openai,council.consolidate`` (dotted names kept)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageProblem("--queues names no queue; e.g. --queues " + ",".join(ALL_QUEUES))
    return ",".join(n if "." in n else f"council.{n}" for n in names)
