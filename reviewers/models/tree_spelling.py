"""File names of the pinned tree as the model sees them, and back.

A file name that is not UTF-8 reaches the diff with U+FFFD for each bad byte; on disk it
keeps its raw bytes (:func:`os.fsdecode` reads each as a lone surrogate, which no UTF-8
reply can carry). The file tools show a name as the diff does and take that spelling
back; several raw names can show alike, and then which file is meant is unknown. The
worker masking the models' copy of the tree finds a secret's file by the same rule
(``workers/execution/backend_request.py``). Source: docs/security.md "The change is
untrusted input" (Model tools), "Secrets in the change".
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REPLACEMENT = "\ufffd"
"""What the diff shows for a byte of a name that is not UTF-8."""

_NOT_ESCAPED = re.compile("[\ud800-\udc7f\udd00-\udfff]")
"""A lone surrogate that :func:`os.fsdecode` never makes (a ``\\ud800`` JSON escape)."""


def shown(text: str) -> str:
    """``text`` with each byte a surrogate stands for shown as UTF-8 shows it (U+FFFD,
    as the diff does) and any other lone surrogate as U+FFFD: always encodable."""
    text = _NOT_ESCAPED.sub(REPLACEMENT, text)
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def spelled_in(tree: Path, path: str) -> list[str]:
    """The ``/``-separated names in ``tree`` that the shown ``path`` may stand for, sorted.

    With U+FFFD in ``path``: every entry whose name shows as ``path`` (a name literally
    holding U+FFFD too), so more than one means the path is ambiguous; only folders inside
    the tree are listed (no ``..``, no link out). Without: ``[path]`` when it exists (a
    link counts), else none. Never raises.
    """
    if REPLACEMENT not in path:
        return [path] if os.path.lexists(tree / path) else []
    if ".." in path.split("/"):
        return []  # never a folder above the tree, which listing it would show
    inside = tree.resolve()
    found = [""]
    for part in path.split("/"):
        step: list[str] = []
        for prefix in found:
            if prefix and not (tree / prefix).resolve().is_relative_to(inside):
                continue  # a link leading out of the tree: not listed
            if REPLACEMENT not in part:
                if os.path.lexists(tree / f"{prefix}{part}"):
                    step.append(f"{prefix}{part}")
                continue
            try:
                names = os.listdir(tree / prefix) if prefix else os.listdir(tree)
            except OSError:
                continue
            step.extend(f"{prefix}{n}" for n in sorted(names) if shown(n) == part)
        found = [f"{name}/" for name in step]
    return sorted(name[:-1] for name in found)
