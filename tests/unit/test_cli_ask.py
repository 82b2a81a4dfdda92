"""``council ask --check``: ok or refused with its code, exit 0 or 2, the refusal on stderr
without the value's contents; usage mistakes exit 2 with a sentence, and the help teaches."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result

from workers.cli import main
from workers.cli.group import COMMANDS

REF = "art_4kQz9XbTn2LmP0sVw7YcRd"
OTHER = "art_H1jW8eNq3UfK5oZt6AxGvB"


def council(*args: str) -> Result:
    """Run the ``council`` command line in this process (stdout and stderr apart)."""
    return CliRunner().invoke(main, list(args))


def check(component: object, *flags: str) -> Result:
    """``council ask --check JSON FLAGS…``."""
    return council("ask", "--check", json.dumps(component), *flags)


@pytest.mark.parametrize(
    ("component", "flags"),
    [
        ({"component_id": "owner-picker"}, ()),
        ({"component_id": "owner-picker"}, ("--no-store",)),
        ({"component_id": "c", "props": {"title": "Who?"}}, ("--refs", "")),
        ({"component_id": "c", "props_ref": REF}, ("--refs", REF)),
        ({"component_id": "c", "props_ref": REF}, ("--refs", f"{OTHER}, {REF},")),
    ],
    ids=["bare", "no-store", "props-empty-store", "ref-resolves", "ref-among-several"],
)
def test_a_good_component_prints_ok(component: object, flags: tuple[str, ...]) -> None:
    """A component that could be raised: "ok" on stdout, nothing on stderr, exit 0."""
    done = check(component, *flags)
    assert (done.exit_code, done.stdout, done.stderr) == (0, "ok\n", "")


@pytest.mark.parametrize(
    ("component", "flags", "code"),
    [
        ({"component_id": "  "}, ("--refs", REF), "shape"),
        ({"component_id": "c", "html": "<b>x</b>"}, (), "shape"),
        ({"component_id": "c", "props": None, "props_ref": REF}, ("--refs", REF), "shape"),
        ({"component_id": "c", "props_ref": ""}, ("--no-store",), "shape"),
        ({"component_id": "c", "props_ref": REF}, ("--no-store",), "no-store"),
        ({"component_id": "c", "props_ref": REF}, (), "no-store"),
        ({"component_id": "c", "props_ref": REF}, ("--refs", ""), "unresolved-ref"),
        ({"component_id": "c", "props_ref": REF}, ("--refs", OTHER), "unresolved-ref"),
    ],
    ids=[
        "blank-id",
        "unknown-key",
        "props-null",
        "blank-ref-before-store",
        "no-store",
        "no-refs-means-no-store",
        "empty-store",
        "other-run-s-ref",
    ],
)
def test_a_refused_component_prints_its_code_and_exits_2(
    component: object, flags: tuple[str, ...], code: str
) -> None:
    """A component the raise would refuse: "refused: CODE" on stdout, exit 2, and on
    stderr the refusal naming the door and the code."""
    done = check(component, *flags)
    assert (done.exit_code, done.stdout) == (2, f"refused: {code}\n")
    assert done.stderr.startswith(f"council ask --check: ask refused ({code}): ")


def test_the_refusal_never_quotes_the_component() -> None:
    """What the command prints describes shapes: a secret in any part stays unprinted."""
    secret = "sk-live-never-print-me"
    for component in (
        {"component_id": secret, secret: 1},
        {"component_id": "c", "props": [secret]},
        {"component_id": "c", "props": {"k": secret * 3000}},
        {"component_id": "c", "props_ref": secret},
        secret,
    ):
        done = check(component, "--refs", REF)
        assert done.exit_code == 2
        assert secret not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["ask"], "--check JSON"),
        (["ask", "--check", "{nope"], "not JSON"),
        (["ask", "--check", "[" * 100_000], "too deeply"),
        (["ask", "--check", '{"component_id": "c"}', "--refs", REF, "--no-store"], "exclude"),
    ],
    ids=["no-check", "not-json", "too-deep", "refs-and-no-store"],
)
def test_usage_mistakes_exit_2_with_a_sentence(args: list[str], says: str) -> None:
    """No --check, text that is not JSON (or nests past the stack), or both --refs and
    --no-store: exit 2, nothing on stdout (so never "refused: …"), the way out on stderr."""
    done = council(*args)
    assert done.exit_code == 2 and done.stdout == ""
    assert says in done.stderr


def test_the_help_teaches_the_shape_and_the_codes() -> None:
    """``council ask --help`` names the keys, the cap, every code, and gives an example;
    the command is registered lazily like the others."""
    assert COMMANDS["ask"] == ("workers.cli.ask", "ask_command")
    done = council("ask", "--help")
    assert done.exit_code == 0
    for word in (
        "component_id",
        "props_ref",
        "16 KiB",
        "shape",
        "no-store",
        "unresolved-ref",
        "council ask --check",
    ):
        assert word in done.stdout, word
    assert "ask" in council("--help").stdout
