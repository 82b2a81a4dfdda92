"""``council ask``: typed human asks from the command line.

Today one mode, ``--check JSON``: check a component exactly as raising an ask would
(:func:`council.asks.component_refusal`), and raise nothing. Raising an ask for real
(``--question TEXT``, on a run that then waits for the answer) comes with the run's
``waiting`` state; the options are laid out for it: ``--check`` is the component's JSON
and ``--refs``/``--no-store`` stand in for the artifact store of the run that would be
raising it. Source: docs/evidence-and-asks.md §2.
"""

from __future__ import annotations

import json

import click

from council.asks import KnownRefs, component_refusal
from council.errors import AskRefused
from workers.cli.context import UsageProblem

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
def ask_command(component: str | None, refs: str | None, no_store: bool) -> None:
    """Check an ask's component as raising the ask would; nothing is raised.

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

    \b
    Examples:
      council ask --check '{"component_id": "owner-picker", "props": {"title": "Who?"}}'
      council ask --check '{"component_id": "reviewer-choice-list",
        "props_ref": "art_4kQz9XbTn2LmP0sVw7YcRd"}' --refs art_4kQz9XbTn2LmP0sVw7YcRd
    """
    if component is None:
        raise UsageProblem(
            "council ask needs --check JSON: the component to check (raising an ask for "
            "real, with --question, is not available yet)"
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


def _refs(text: str) -> list[str]:
    """The refs of ``--refs``: split on commas, spaces around each trimmed, empties
    dropped (so ``--refs ""`` is a store that holds none)."""
    return [ref.strip() for ref in text.split(",") if ref.strip()]
