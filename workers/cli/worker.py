"""``council worker``: a Celery worker with the council's app, queues and threads pool.

Everything it writes to stdout and stderr is a JSON line (:mod:`workers.app.stdio`), at INFO
unless ``--log-level`` says otherwise; ``--metrics-port`` serves Prometheus metrics
(:mod:`workers.app.metrics`). Source: docs/architecture.md "Observability".
"""

from __future__ import annotations

from pathlib import Path

import click
import structlog
from click.core import ParameterSource

from workers.app.celery_config import ALL_QUEUES
from workers.cli.context import CliContext, Incomplete, UsageProblem
from workers.stores import RedisClient

WORKER_LOG_LEVEL = "INFO"
"""A worker's level when neither ``council --log-level`` nor ``council worker
--log-level`` is given: a team watching a worker wants each task's lines."""

LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"]


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
@click.option(
    "--log-level",
    "log_level",
    type=click.Choice(LEVELS, case_sensitive=False),
    help=f"Level of the worker's JSON lines (default: council --log-level if given, else "
    f"{WORKER_LOG_LEVEL}).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(min=0, max=65535),
    help="Serve Prometheus metrics on this port (http://HOST:PORT/metrics); off by default.",
)
@click.option(
    "--metrics-host",
    default="127.0.0.1",
    show_default=True,
    help="Address the metrics server binds (0.0.0.0: every interface).",
)
@click.option(
    "--providers",
    type=click.Path(dir_okay=False, path_type=Path),
    help=(
        "The worker's provider registry, a TOML file (default: COUNCIL_PROVIDERS; unset: "
        "OPENAI_API_KEY/ANTHROPIC_API_KEY's standard endpoints). Rosters may only use what "
        "it holds."
    ),
)
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def worker_command(
    cli: CliContext,
    queues: str,
    concurrency: int | None,
    hostname: str | None,
    log_level: str | None,
    metrics_port: int | None,
    metrics_host: str,
    providers: Path | None,
    celery_args: tuple[str, ...],
) -> None:
    """Run a council worker on COUNCIL_REDIS_URL (any number of hosts may).

    Every line it writes (stdout and stderr) is one JSON object; a task's lines carry
    run_id, session, participant, task_id and attempt. Extra arguments go to ``celery
    worker`` as they are. ``celery -A workers.celery_app worker`` works too.

    \b
    Example:
      COUNCIL_REDIS_URL=redis://localhost:6379/0 council worker -c 32 --metrics-port 9464
      council worker --providers /etc/council/providers.toml
      council worker 2>&1 | jq -c 'select(.participant=="hawk")'
    """
    from workers.app.stdio import install_worker_output

    level = (log_level or _group_level(cli) or WORKER_LOG_LEVEL).upper()
    install_worker_output(level)  # from here on, every line is JSON
    if providers is not None:
        cli.settings = cli.settings.model_copy(update={"providers": providers})
    try:
        _run(cli, queues, concurrency, hostname, level, metrics_port, metrics_host, celery_args)
    except click.ClickException as exc:
        # One error line with the message, not click's "Error: …" printed to stderr (a
        # "printed" line at warning): a worker that cannot start is trouble.
        structlog.get_logger("council.worker").error(
            "worker_failed", message=exc.format_message(), exit_code=exc.exit_code
        )
        raise click.exceptions.Exit(exc.exit_code) from None


def _run(
    cli: CliContext,
    queues: str,
    concurrency: int | None,
    hostname: str | None,
    level: str,
    metrics_port: int | None,
    metrics_host: str,
    celery_args: tuple[str, ...],
) -> None:
    """Start the worker; raises ``UsageProblem`` (2) or ``Incomplete`` (3) when it cannot."""
    misplaced = [a for a in celery_args if a == "--redis" or a.startswith("--redis=")]
    if misplaced:  # it would reach `celery worker`, which knows no such option
        raise UsageProblem(
            "--redis is an option of council itself, not of its worker command: write it "
            "before the command (council --redis URL worker), or set COUNCIL_REDIS_URL"
        )
    if not cli.distributed:
        raise UsageProblem(
            "council worker needs a broker: set COUNCIL_REDIS_URL or pass --redis URL "
            "before the command (council --redis URL worker); embedded mode needs no "
            "worker: council review runs one inside itself"
        )
    # Exit 3 within 5 s (URL redacted) when Redis cannot be reached, 2 when the provider
    # registry is wrong; installed, so every task of this process uses that registry.
    rt = cli.runtime()
    from workers.app import celery_config, services

    services.install(rt)
    registry = rt.providers
    structlog.get_logger("council.worker").info(
        "provider_registry",
        source=registry.source,
        providers=[
            f"{p.name} {p.api} {p.base_url} {p.key_env or '-'}" for p in registry.providers.values()
        ],
        program_env=list(registry.program_env),
    )

    _say_promises(rt.client, cli.settings.redis_url_value() or "")
    app = celery_config.create_app(cli.settings)
    names = _queue_names(queues)
    if metrics_port is not None:
        _serve_metrics(cli, metrics_port, metrics_host, names, app.conf.broker_transport_options)
    argv = [
        "worker",
        "--pool=threads",
        f"--concurrency={concurrency or cli.settings.worker_threads}",
        f"--queues={names}",
        f"--loglevel={level}",
    ]
    if hostname:
        argv.append(f"--hostname={hostname}")
    argv.extend(celery_args)
    try:
        app.worker_main(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise Incomplete(f"the celery worker exited with status {exc.code}") from None


def _say_promises(client: RedisClient, url: str) -> None:
    """Say what the Redis reached promises (one line), warn for each weak promise, and
    refuse to start on a read-only replica (exit 3)."""
    import redis

    from workers.app.logging import redact_url
    from workers.app.redis_promises import read_promises

    log = structlog.get_logger("council.worker")
    try:
        promises = read_promises(client)
    except redis.RedisError as exc:
        log.warning("redis_promises_unknown", error=str(exc) or type(exc).__name__)
        return
    log.info(
        "redis_promises",
        role=promises.role,
        appendonly=promises.aof,
        appendfsync=promises.appendfsync,
        save=promises.rdb_saves,
        replicas=promises.replicas,
        maxmemory=promises.maxmemory,
        maxmemory_policy=promises.policy,
    )
    for warning in promises.warnings:
        log.warning("redis_promise_weak", message=warning)
    if promises.read_only:
        raise Incomplete(
            f"the Redis at {redact_url(url) if url else 'COUNCIL_REDIS_URL'} is a read-only "
            "replica: every write a review needs would be refused; point COUNCIL_REDIS_URL "
            "at the primary"
        )


def _group_level(cli: CliContext) -> str | None:
    """``council --log-level X worker``'s X when the user gave it, else None (the
    group's default, WARNING, is the CLI's; a worker's is :data:`WORKER_LOG_LEVEL`)."""
    ctx = click.get_current_context(silent=True)
    group = ctx.parent if ctx is not None else None
    if group is None or group.get_parameter_source("log_level") in (
        None,
        ParameterSource.DEFAULT,
    ):
        return None
    return cli.log_level


def _serve_metrics(
    cli: CliContext, port: int, host: str, names: str, transport_options: object
) -> None:
    """Start the metrics server (exit 2 when the address cannot be bound)."""
    from workers.app.metrics import serve

    queues = list(dict.fromkeys([*ALL_QUEUES, *names.split(",")]))
    try:
        serve(
            port,
            host,
            redis_url=cli.settings.redis_url_value(),
            queues=queues,
            transport_options=transport_options if isinstance(transport_options, dict) else None,
        )
    except OSError as exc:
        raise UsageProblem(
            f"--metrics-port {port}: cannot listen on {host}:{port} ({exc.strerror or exc}); "
            f"pick a free port or another --metrics-host"
        ) from None


def _queue_names(text: str) -> str:
    """``openai,consolidate`` → ``council.openai,council.consolidate`` (dotted names kept)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageProblem("--queues names no queue; e.g. --queues " + ",".join(ALL_QUEUES))
    return ",".join(n if "." in n else f"council.{n}" for n in names)
