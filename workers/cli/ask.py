"""``council ask``: typed human asks from the command line.

Two modes. ``--check JSON``: check a component exactly as raising an ask would
(:func:`council.asks.component_refusal`), and raise nothing; ``--refs``/``--no-store``
stand in for the artifact store of the run that would be raising it.
``--question TEXT [--component JSON]``, inside a command reviewer a council worker started
(``$COUNCIL_JOURNAL`` set): the question is handed to the worker
(:mod:`reviewers.sandbox.ask_desk`), which checks it against the run's artifact store;
refused, the refusal is printed and the exit is 2 (the reviewer goes on); accepted, its
id is printed and the run waits for a person after the round (exit 0); on the run after
the answer, the same question prints the answer at once (exit 0).
Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import click

from council.asks import KnownRefs, component_refusal
from council.errors import AskRefused
from reviewers.sandbox.script_desk import ASK_SUFFIX, ASKED_SUFFIX, scripts_dir, write_whole
from workers.cli.context import UsageProblem

WAIT_MAX_S = 60
"""Longest wait for the worker's reply to a question, in seconds (it checks at once)."""

DOOR = "council ask --check"
"""The door a checked component comes through, named in its refusal."""

EXAMPLE = """'{"component_id": "owner-picker"}'"""
"""A component to show in a usage error."""

REFUSED_EXIT = 2
"""Exit code of a refused component (the raise would have failed: fix the input)."""


@click.command("ask")
@click.option(
    "--check",
    "component",
    metavar="JSON",
    help="A component as JSON: check it as raising an ask would, and raise nothing.",
)
@click.option(
    "--refs",
    metavar="REF,…",
    help='The artifact refs that resolve in the run\'s scope, comma-separated; --refs "" '
    "is a store attached that holds none.",
)
@click.option(
    "--no-store",
    is_flag=True,
    help="No artifact store attached (also what leaving out --refs means).",
)
@click.option(
    "--question",
    metavar="TEXT",
    help="Inside a command reviewer: ask a person TEXT (the run waits for the answer "
    "after the round; on the run after it, the answer is printed).",
)
@click.option(
    "--component",
    "with_component",
    metavar="JSON",
    help="With --question: the component that collects the answer (as for --check).",
)
@click.option(
    "--journal-file",
    envvar="COUNCIL_JOURNAL",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The worker's journal file (env COUNCIL_JOURNAL): the question is handed to "
    "the worker beside it.",
)
def ask_command(
    component: str | None,
    refs: str | None,
    no_store: bool,
    question: str | None,
    with_component: str | None,
    journal_file: Path | None,
) -> None:
    """Check an ask's component as raising the ask would (--check); or, inside a command
    reviewer, ask a person a question (--question).

    A typed ask pauses work with a question for a person and may name which of the
    front end's registered screen components collects the answer. That component is a
    JSON object with these keys and no other:

    \b
      component_id  required: a non-blank string the front end registered
      props         optional: a JSON object of at most 16 KiB (16 384 bytes of
                    compact UTF-8 JSON), kept with the paused work
      props_ref     optional: an artifact ref (art_…) of the run, for larger props

    null is not "absent": leave a key out instead. Prints "ok" (exit 0), or
    "refused: CODE" (exit 2) with what is wrong on stderr, said by the value's shape,
    never quoting it. The codes, in the order they are checked:

    \b
      shape           the component is malformed (checked before any store)
      no-store        a props_ref, and no artifact store attached (--no-store, or no --refs)
      unresolved-ref  a props_ref that is not among the run's artifacts (--refs)

    With --question (inside a command reviewer): exit 2 with the refusal on stderr when
    the worker refuses the question (the review goes on); exit 0 printing "asked: ID"
    when it is put to a person (the run waits for the answer after this round, then
    runs the reviewer again); exit 0 printing the answer when it was answered.

    \b
    Examples:
      council ask --question "Which profile runs in production?" \\
        --component '{"component_id": "choice", "props": {"options": ["a", "b"]}}'
      council ask --check '{"component_id": "owner-picker", "props": {"title": "Who?"}}'
      council ask --check '{"component_id": "reviewer-choice-list",
        "props_ref": "art_4kQz9XbTn2LmP0sVw7YcRd"}' --refs art_4kQz9XbTn2LmP0sVw7YcRd
    """
    if question is not None:
        if component is not None:
            raise UsageProblem("--question and --check exclude each other")
        _ask_worker(question, _json(with_component, "--component"), journal_file)
        return
    if component is None:
        raise UsageProblem(
            "council ask needs --check JSON (the component to check) or, inside a command "
            "reviewer, --question TEXT"
        )
    if refs is not None and no_store:
        raise UsageProblem(
            "--refs and --no-store exclude each other: --refs lists the artifacts of an "
            'attached store (--refs "" for one that holds none), --no-store attaches none'
        )
    try:
        value = json.loads(component)
    except json.JSONDecodeError as exc:
        raise UsageProblem(
            f"--check is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            f"pass the component as a JSON object, e.g. {EXAMPLE}"
        ) from None
    except RecursionError:
        raise UsageProblem(
            f"--check nests too deeply to read; pass the component as a JSON object, e.g. {EXAMPLE}"
        ) from None
    scope = None if refs is None else KnownRefs.of(_refs(refs))
    refusal = component_refusal(value, scope)
    if refusal is None:
        click.echo("ok")
        return
    click.echo(f"refused: {refusal.code}")
    click.echo(str(AskRefused(refusal.code, DOOR, refusal.description)), err=True)
    raise SystemExit(REFUSED_EXIT)


def _json(text: str | None, option: str) -> object:
    """The JSON value of ``option`` (None when not given); UsageProblem when not JSON."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise UsageProblem(f"{option} is not JSON; pass a JSON object, e.g. {EXAMPLE}") from None


def _ask_worker(question: str, component: object, journal: Path | None) -> None:
    """Hand the question to the worker's desk, wait for its reply, print it and exit."""
    if journal is None or not scripts_dir(journal).is_dir():
        raise UsageProblem(
            "council ask --question works inside a command reviewer a council worker "
            "started (COUNCIL_JOURNAL names its journal file); check a component with --check"
        )
    folder = scripts_dir(journal)
    name = uuid.uuid4().hex
    request: dict[str, object] = {"question": question}
    if component is not None:
        request["component"] = component
    try:
        write_whole(folder / f"{name}{ASK_SUFFIX}", request)
    except OSError as exc:
        raise UsageProblem(f"cannot hand the question to the worker: {exc.strerror}") from None
    reply_path = folder / f"{name}{ASKED_SUFFIX}"
    deadline = time.monotonic() + WAIT_MAX_S
    reply: object = None
    while time.monotonic() < deadline:
        try:
            reply = json.loads(reply_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            time.sleep(0.02)
            continue
        reply_path.unlink(missing_ok=True)
        break
    if not isinstance(reply, dict):
        raise UsageProblem("the worker gave no reply to the question; go on without it")
    outcome = reply.get("outcome")
    if outcome == "answered":
        click.echo(str(reply.get("answer", "")))
        return
    if outcome == "asked":
        click.echo(f"asked: {reply.get('id')}")
        click.echo(
            "council ask: the question is put to a person; the run waits for the answer "
            "after this round, then runs this reviewer again",
            err=True,
        )
        return
    click.echo(f"refused: {reply.get('code', outcome)}")
    click.echo(str(reply.get("message", "the question was not asked")), err=True)
    raise SystemExit(REFUSED_EXIT)


def _refs(text: str) -> list[str]:
    """The refs of ``--refs``: split on commas, spaces around each trimmed, empties
    dropped (so ``--refs ""`` is a store that holds none)."""
    return [ref.strip() for ref in text.split(",") if ref.strip()]
