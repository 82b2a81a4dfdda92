"""council/change/analyzer_config.py: which analyzer tables a change to a sectioned file
(pyproject.toml, Cargo.toml, package.json) touched, as the run's note names them."""

from __future__ import annotations

import pytest

from council.change.analyzer_config import changed_tables, config_changes, config_note

TOML = b'[project]\nname = "a"\n\n[tool.ruff]\nline-length = 100\n\n[tool.mypy]\nstrict = true\n'


@pytest.mark.parametrize(
    ("name", "base", "head", "tables"),
    [
        ("pyproject.toml", TOML, TOML.replace(b"100", b"120"), ["[tool.ruff]"]),
        ("pyproject.toml", TOML, TOML.replace(b'"a"', b'"b"'), []),
        (
            "pyproject.toml",
            TOML,
            TOML + b'\n[tool."we ird"]\nx = 1\n',
            ['[tool."we ird"]'],
        ),
        ("pyproject.toml", None, TOML, ["[tool.mypy]", "[tool.ruff]"]),
        ("pyproject.toml", TOML, b"[tool\n", None),
        ("Cargo.toml", b"[workspace.lints.rust]\nx = 1\n", b"", ["[workspace.lints]"]),
        ("package.json", b'{"prettier": {"semi": true}}', b'{"prettier": {}}', ["prettier"]),
    ],
)
def test_changed_tables_name_what_differs(
    name: str, base: bytes | None, head: bytes | None, tables: list[str] | None
) -> None:
    """Only the tables that differ, a [tool.*] table by its tool; None when a side
    cannot be parsed; a key that is not bare is quoted (it is the change's text)."""
    assert changed_tables(name, base, head) == tables


def test_the_note_names_the_changed_tables_not_every_tool() -> None:
    """A pull request tightening ``[tool.ruff]`` is named by that table alone; one that
    edits only ``[project]`` is not analyzer configuration at all."""
    changes = config_changes(
        [
            ("pyproject.toml", TOML, TOML.replace(b"100", b"120")),
            ("sub/pyproject.toml", TOML, TOML.replace(b'"a"', b'"b"')),
        ]
    )
    note = config_note(changes, [], [])
    assert note is not None
    assert '"pyproject.toml" (edited: [tool.ruff])' in note
    assert "mypy" not in note and "sub/pyproject.toml" not in note
