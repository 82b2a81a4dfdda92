"""The shared-case loader's repeat helper (shared/cases/README.md, "The repeat helper")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cases.loader import CaseError, load_case


def _write(tmp_path: Path, case: dict[str, object]) -> Path:
    """Write one case file and return its path."""
    path = tmp_path / "001-case.json"
    path.write_text(json.dumps(case), encoding="utf-8")
    return path


def test_markers_are_replaced_at_any_depth_but_not_in_keys_or_name_why(tmp_path: Path) -> None:
    """Every string value at any depth is expanded; keys, name, why and the spec are not."""
    spec = [{"marker": "@A@", "char": "xy", "count": 3}, {"marker": "@B@", "char": "z", "count": 2}]
    case = load_case(
        _write(
            tmp_path,
            {
                "name": "@A@",
                "why": "@B@",
                "answer": "<@A@|@B@>",
                "recorded": [{"@A@": ["@B@", 1, None]}],
                "expect": {"findings": [{"discussion": "@A@"}]},
                "answer_repeat": spec,
            },
        )
    )
    assert case["name"] == "@A@" and case["why"] == "@B@"
    assert case["answer"] == "<xyxyxy|zz>"
    assert case["recorded"] == [{"@A@": ["zz", 1, None]}]
    assert case["expect"] == {"findings": [{"discussion": "xyxyxy"}]}
    assert case["answer_repeat"] == spec


def test_a_malformed_repeat_spec_is_refused(tmp_path: Path) -> None:
    """A repeat helper the loader cannot interpret fails the case instead of guessing."""
    bad: dict[str, object] = {"name": "n", "answer_repeat": {"marker": "", "char": "x", "count": 1}}
    with pytest.raises(CaseError):
        load_case(_write(tmp_path, bad))
