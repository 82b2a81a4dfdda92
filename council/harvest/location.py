"""Reading an entry's ``location`` into an anchor, degrading instead of dropping.

A location that cannot be read precisely still says something: a line finding without a
usable number is still about its file, a finding without a path is still about the
change. Each degradation warns, in the order of the table of docs/harvest.md §4 (the
location rows): ``no-location``, ``wrong-type`` (kind, then file/path),
``file-without-path`` / ``line-without-path``, ``bad-line-number``,
``line-without-number``, ``reversed-range``, ``wrong-type`` (side) / ``unknown-side``,
``unknown-location-kind``. The path is read in its plain spelling (``./app.py`` is
``app.py``; :func:`council.harvest.paths.tidy_path`), without a warning.

Source: docs/harvest.md §1 (the location shape), §2 (anchors), §4 (the location rows).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from council.harvest.fields import EntryWarnings, first_text, shown, text_value, type_name
from council.harvest.paths import tidy_path
from council.model.findings import Anchor, ChangeAnchor, FileAnchor, LineAnchor

_DIGITS = re.compile(r"[0-9]+")
"""A line number written as text: ASCII digits only (``"12"``; not ``"12.0"``)."""

_TOO_LONG = 10**4000
"""No line number is this long; a Python caller's giant int is refused, not printed."""

BAD_NUMBER = -1
"""What :func:`line_number` returns for a value that was given but is not usable."""


def line_number(value: object) -> int | None:
    """A usable line number (whole, >= 1), None when absent, :data:`BAD_NUMBER` if unusable.

    Usable: ``12``, ``12.0``, ``"12"`` (text is trimmed first). Absent: ``null`` or blank
    text. Unusable: 0, negatives, fractions, ``"12.0"``, words, booleans. Why so strict:
    a line number we had to guess would anchor a finding somewhere it was never meant.
    Never raises. Source: docs/harvest.md §4.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return BAD_NUMBER
    if isinstance(value, int):
        return value if 1 <= value < _TOO_LONG else BAD_NUMBER
    if isinstance(value, float):
        whole = math.isfinite(value) and value.is_integer() and value >= 1
        return int(value) if whole else BAD_NUMBER
    if isinstance(value, str):
        spelled = value.strip()
        if not spelled:
            return None
        if not _DIGITS.fullmatch(spelled):
            return BAD_NUMBER
        try:
            number = int(spelled)
        except ValueError:  # more digits than Python converts: no file is that long
            return BAD_NUMBER
        return number if number >= 1 else BAD_NUMBER
    return BAD_NUMBER


def read_location(
    entry: Mapping[object, object], notes: EntryWarnings, witness: str | None
) -> Anchor:
    """The anchor an entry's ``location`` gives; the warnings of reading it go to ``notes``.

    ``witness`` (the pinned commit, or None) is stamped on every anchor built, the
    degraded ones too. Never raises. Source: docs/harvest.md §4 (location rows).
    """
    change = ChangeAnchor(witness=witness)
    location = entry.get("location")
    if not isinstance(location, Mapping):
        notes.add("no-location", "has no location object; it was anchored to the whole change.")
        return change
    kind_raw = location.get("kind")
    kind = text_value(kind_raw)
    if kind is False:
        notes.add(
            "wrong-type",
            f"has a location kind that is {type_name(kind_raw)}, not text; it was read as absent.",
        )
    folded = kind.casefold() if isinstance(kind, str) else None
    if folded == "global":
        return change
    path_field = first_text(location, "file", "path")
    for name in path_field.wrong:
        notes.add(
            "wrong-type",
            f"has a location {name} that is {type_name(location.get(name))}, not text; it "
            "was read as absent.",
        )
    path = tidy_path(path_field.text) if path_field.text is not None else None
    if folded in ("file", "line") and path is None:
        notes.add(
            "file-without-path" if folded == "file" else "line-without-path",
            f"is a {folded} finding without a path; it was anchored to the whole change.",
        )
        return change
    if folded == "file" and path is not None:
        return FileAnchor(path=path, witness=witness)
    if folded == "line" and path is not None:
        return _line_anchor(location, path, notes, witness)
    where = "the whole change" if path is None else "its file"
    if kind is None:
        said = "has no location kind (line, file or global)"
    else:
        said = f"has location kind {shown(kind_raw)}, which is not line, file or global"
    notes.add("unknown-location-kind", f"{said}; it was anchored to {where}.")
    return change if path is None else FileAnchor(path=path, witness=witness)


def _line_anchor(
    location: Mapping[object, object], path: str, notes: EntryWarnings, witness: str | None
) -> Anchor:
    """A line (or range) anchor, or the file anchor when no usable line number was given.

    start = ``start`` else ``line`` (the first USABLE; an unused alias is not judged);
    end = ``end`` else start. Any unusable number consulted warns ``bad-line-number``
    once, before ``line-without-number`` and ``reversed-range``.
    """
    bad = False
    start = line_number(location.get("start"))
    if start is None or start == BAD_NUMBER:
        bad = start == BAD_NUMBER
        start = line_number(location.get("line"))
        if start == BAD_NUMBER:
            bad, start = True, None
    bad_message = "gives a line number that is not a whole number of at least 1; it was not used."
    if start is None:
        if bad:
            notes.add("bad-line-number", bad_message)
        notes.add(
            "line-without-number",
            "is a line finding without a usable line number; it was anchored to its file.",
        )
        return FileAnchor(path=path, witness=witness)
    end = line_number(location.get("end"))
    if end is None or end == BAD_NUMBER:
        bad = bad or end == BAD_NUMBER
        end = start
    if bad:
        notes.add("bad-line-number", bad_message)
    if end < start:
        notes.add(
            "reversed-range",
            f"gives its range backwards (start {start}, end {end}); it was read as lines "
            f"{end} to {start}.",
        )
        start, end = end, start
    side_raw = location.get("side")
    side = text_value(side_raw)
    if side is False:
        notes.add(
            "wrong-type",
            f"has a side that is {type_name(side_raw)}, not text; the new side was used.",
        )
    elif isinstance(side, str) and side.casefold() not in ("new", "old"):
        notes.add(
            "unknown-side",
            f"names side {shown(side)}, which is neither new nor old; the new side was used.",
        )
    old = isinstance(side, str) and side.casefold() == "old"
    return LineAnchor(
        path=path,
        side="old" if old else "new",
        line=end,
        start_line=start if start < end else None,
        witness=witness,
    )
