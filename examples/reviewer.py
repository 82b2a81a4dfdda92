#!/usr/bin/env python3
"""An example ``command`` reviewer: flags simple smells on the lines a change adds.

How a council ``command`` reviewer works, in one small stdlib-only file:

* the prompt arrives on stdin; the diff is inside it (unified diff, ``+++ b/PATH``
  headers, ``@@ -a,b +c,d @@`` hunks);
* each finding is recorded the moment it is found, one JSON object per line appended to
  the file named by ``$COUNCIL_JOURNAL`` (when set): if the reviewer is stopped or dies,
  what it wrote down is kept;
* the answer is printed on stdout at the end: ``{"findings": [...]}`` with every finding
  again (the council folds the journal copies into the answer's).

Smells looked for on added lines: ``print(`` calls and bare ``except:`` in Python files,
to-do and fix-me markers (the upper-case words), and lines over 120 characters. Line
anchors use new-side line numbers computed from the hunk headers.

Roster entry::

    [[reviewers]]
    id = "smells"
    backend = "command"
    program = "./reviewer.py"
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

MAX_LINE = 120
"""Longest added line, in characters, before it is flagged."""

HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
PRINT = re.compile(r"(?<![\w.])print\(")
MARKER = re.compile(r"\b(T[O]DO|F[I]XME)\b")
"""To-do and fix-me markers; spelled with brackets so this file does not carry them."""
BARE_EXCEPT = re.compile(r"^\s*except\s*:")
PYTHON_SUFFIXES = (".py", ".pyi")


def unquote_path(text: str) -> str:
    """A path from a diff header; git quotes unusual names C-style (``"b/caf\\303\\251"``)."""
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text
    raw = bytearray()
    body, i = text[1:-1], 0
    simple = {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\", "a": b"\a", "b": b"\b"}
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            following = body[i + 1]
            if following in simple:
                raw += simple[following]
                i += 2
                continue
            if body[i + 1 : i + 4].isdigit():
                raw.append(int(body[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
        raw += char.encode("utf-8")
        i += 1
    return raw.decode("utf-8", errors="replace")


def added_lines(prompt: str) -> Iterator[tuple[str, int, str]]:
    """Yield (path, new-side line number, text) for every line the diff adds.

    Hunks are walked by their counts, so an added line that itself starts with ``++``
    is never mistaken for a file header. Deleted files (``+++ /dev/null``) are skipped.
    """
    path: str | None = None
    old_left = new_left = 0
    line_no = 0
    for line in (raw.removesuffix("\r") for raw in prompt.split("\n")):
        if old_left > 0 or new_left > 0:
            tag, text = line[:1], line[1:]
            if tag == "+":
                if path is not None:
                    yield path, line_no, text
                line_no += 1
                new_left -= 1
            elif tag == "-":
                old_left -= 1
            elif tag == " " or line == "":
                line_no += 1
                old_left -= 1
                new_left -= 1
            if tag in ("+", "-", " ", "\\") or line == "":
                continue
            old_left = new_left = 0  # the hunk ended early: read the line as a header
        if line.startswith("+++ "):
            name = unquote_path(line[4:].split("\t")[0].rstrip())
            path = name[2:] if name.startswith("b/") else None
            continue
        match = HUNK.match(line)
        if match:
            old_left = int(match.group(1) or "1")
            line_no = int(match.group(2))
            new_left = int(match.group(3) or "1")


def smells(path: str, line_no: int, text: str) -> Iterator[dict[str, Any]]:
    """The findings one added line earns, in the answer contract's shape."""
    python = path.endswith(PYTHON_SUFFIXES)

    def finding(label: str, severity: str, subject: str, discussion: str) -> dict[str, Any]:
        return {
            "location": {"kind": "line", "file": path, "start": line_no, "side": "new"},
            "label": label,
            "subject": f"{subject} (line {line_no})",
            "discussion": discussion,
            "severity": severity,
            "confidence": 0.9,
        }

    if python and PRINT.search(text):
        yield finding(
            "nitpick",
            "minor",
            "print() call left in",
            "Debugging output goes to the user's stdout; use logging, or remove it.",
        )
    if python and BARE_EXCEPT.match(text):
        yield finding(
            "issue",
            "medium",
            "bare except: catches everything",
            "A bare except also catches KeyboardInterrupt and SystemExit and hides real "
            "errors; catch the exceptions this code expects.",
        )
    marker = MARKER.search(text)
    if marker:
        yield finding(
            "todo",
            "minor",
            f"{marker.group(1)} marker added",
            "Unfinished work is being merged; do it now, or track it in an issue.",
        )
    if len(text) > MAX_LINE:
        yield finding(
            "nitpick",
            "minor",
            f"line is {len(text)} characters long",
            f"Lines over {MAX_LINE} characters are hard to read in review and in diffs.",
        )


def record(journal: str | None, entry: dict[str, Any]) -> None:
    """Append one finding to the journal file now, so a stop does not lose it."""
    if not journal:
        return
    try:
        with open(journal, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    except OSError as error:
        print(f"reviewer: could not record in {journal}: {error}", file=sys.stderr)


def main() -> int:
    """Read the prompt, record each smell as it is found, print the answer."""
    prompt = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    journal = os.environ.get("COUNCIL_JOURNAL")
    findings: list[dict[str, Any]] = []
    for path, line_no, text in added_lines(prompt):
        for entry in smells(path, line_no, text):
            record(journal, entry)
            findings.append(entry)
    print(json.dumps({"findings": findings}, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
