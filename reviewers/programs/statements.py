"""Python statements' line spans: which lines one statement covers.

Why: an analyzer marks where a statement starts (bandit: a call's first two lines), not
the line that makes it wrong, and a change may edit a continuation line of a long call
(``shell=False`` → ``shell=True`` six lines down). Knowing the statement's span lets the
``sarif`` backend keep a result whose statement the change edited, however far from its
start the edit is (:func:`council.readers.sarif.read_sarif`).
:func:`statement_spans` is pure; :func:`python_statements` reads a tree's file for it,
with a size cap.

Source: docs/architecture.md "Reports, the CLI and the gate".
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

SOURCE_MAX_BYTES = 1024 * 1024
"""Most bytes of a changed file read to find its statements (bytes); a larger file gets
no spans, and only the hunk rule applies to it."""


def statement_spans(source: bytes) -> tuple[tuple[int, int], ...]:
    """The (first, last) lines (inclusive, from 1) of each statement of Python ``source``.

    A compound statement (``def``, ``if``, ``with``, …) spans its header only, up to the
    line before its body's first statement: its body's statements have their own spans,
    and a result on a ``def`` line is not about every line of the function. Ascending,
    no duplicates. Never raises: source that does not parse (a syntax error, a null
    byte, nesting too deep for the parser) has no spans.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    spans: set[tuple[int, int]] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        first = node.lineno
        last = node.end_lineno if node.end_lineno is not None else first
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            last = max(first, body[0].lineno - 1)
        spans.add((first, max(first, last)))
    return tuple(sorted(spans))


def python_statements(root: Path) -> Callable[[str], tuple[tuple[int, int], ...]]:
    """Read a changed Python file of the tree at ``root`` for its statement spans.

    The returned function takes a tree-relative path and gives its spans
    (:func:`statement_spans`), or none when the path does not end in ``.py``/``.pyi``,
    is not a regular file, resolves outside ``root`` (a symbolic link the change added),
    cannot be read, or holds more than :data:`SOURCE_MAX_BYTES`. Never raises.
    """

    def spans(path: str) -> tuple[tuple[int, int], ...]:
        if not path.endswith((".py", ".pyi")):
            return ()
        target = root / path
        try:
            if not target.resolve().is_relative_to(root.resolve()) or not target.is_file():
                return ()
            with target.open("rb") as handle:
                source = handle.read(SOURCE_MAX_BYTES + 1)
        except (OSError, ValueError):
            return ()
        return statement_spans(source) if len(source) <= SOURCE_MAX_BYTES else ()

    return spans
