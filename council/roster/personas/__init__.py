"""Personas: the lenses a reviewer can be given, each a charter file used as its system prompt.

A persona (``persona = "security"``) is part of a participant's identity. Its charter
``{id}.md`` is a frontmatter block (``name``, ``description``), then the body the reviewer
reads as its lens. Five ship here (``general``, ``security``, ``performance``, ``tests``,
``api-design``); ``[council] persona_dirs`` are searched first, in order. A persona not
found (:class:`~council.errors.PersonaNotFound`) or a malformed charter
(:class:`~council.errors.MalformedCharter`) refuses the round before anything is sent.
Reading charters is the one I/O here: the package's own (:mod:`importlib.resources`) and
those of the directories the caller names. No clock, environment or network.
Source: docs/identity-and-clocks.md "Participant" (persona).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path, PurePath

from pydantic import BaseModel, ConfigDict

from council.errors import MalformedCharter, PersonaNotFound

PERSONA_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""What a persona id looks like: the charter's file name without ``.md`` (no dots, no
slashes, so an id can never name a file outside the directories searched)."""

FRONTMATTER_KEYS: tuple[str, ...] = ("name", "description")
"""The keys a charter's frontmatter holds; both are required."""

BUILT_IN = "the personas built into council (council/roster/personas)"
"""How the package's own charters are named among the places looked."""

_FENCE = "---"
_FRONTMATTER_FIX = (
    "Start the file with a frontmatter block: a line '---', then 'name: ...' and "
    "'description: ...', then a line '---', then the charter itself"
)


class Charter(BaseModel):
    """One persona's charter, read and checked.

    * ``id``: the persona id (the file name without ``.md``), as the roster names it.
    * ``name``: a short title for people ("Security").
    * ``description``: one line on what the lens looks for (for listings).
    * ``body``: the charter text, given to the reviewer as its lens (``persona_text`` of
      :func:`council.roster.prompt.build_prompt`); stripped, never empty.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    description: str
    body: str


def _unquoted(value: str) -> str:
    """A frontmatter value without one pair of surrounding quotes, if it has them."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1].strip()
    return value


def _frontmatter(lines: Sequence[str], source: str) -> dict[str, str]:
    """The ``key: value`` lines between the fences, checked: known keys, once, non-blank."""
    fields: dict[str, str] = {}
    for number, line in enumerate(lines, start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, colon, value = line.partition(":")
        key = key.strip()
        if not colon:
            raise MalformedCharter(
                source, f"frontmatter line {number} is not 'key: value'", _FRONTMATTER_FIX
            )
        if key not in FRONTMATTER_KEYS:
            raise MalformedCharter(
                source,
                f"unknown frontmatter key {key!r} on line {number}",
                f"The frontmatter holds only: {', '.join(FRONTMATTER_KEYS)}",
            )
        if key in fields:
            raise MalformedCharter(
                source, f"frontmatter key {key!r} is repeated on line {number}", "Keep one"
            )
        text = _unquoted(value.strip())
        if not text:
            raise MalformedCharter(
                source, f"frontmatter {key!r} is blank", f"Write the {key} after '{key}:'"
            )
        fields[key] = text
    for key in FRONTMATTER_KEYS:
        if key not in fields:
            raise MalformedCharter(
                source, f"the frontmatter has no {key!r}", f"Add a line '{key}: ...' to it"
            )
    return fields


def parse_charter(text: str, source: str, *, persona_id: str | None = None) -> Charter:
    """Read a charter file's text into a :class:`Charter`.

    ``source`` names the text in messages (a path); the id is ``persona_id`` when given,
    else the file name of ``source`` without ``.md``. Line endings may be ``\\n`` or
    ``\\r\\n``; a leading byte-order mark is ignored. Why strict: a charter is the
    reviewer's whole lens, and a slip (no closing fence) would otherwise send the
    frontmatter as the charter, or nothing. Raises :class:`~council.errors.MalformedCharter`
    (a ``ValueError``) naming what is missing: the opening or closing ``---``, ``name``,
    ``description``, a non-blank body; or an unknown, repeated or blank key.
    """
    pid = persona_id if persona_id is not None else PurePath(source).stem
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip() != _FENCE:
        raise MalformedCharter(source, "it does not open with a '---' line", _FRONTMATTER_FIX)
    try:
        close = next(i for i in range(1, len(lines)) if lines[i].strip() == _FENCE)
    except StopIteration:
        raise MalformedCharter(
            source, "the frontmatter has no closing '---' line", _FRONTMATTER_FIX
        ) from None
    fields = _frontmatter(lines[1:close], source)
    body = "\n".join(lines[close + 1 :]).strip()
    if not body:
        raise MalformedCharter(
            source,
            "the charter has no body after the frontmatter",
            "Write what the lens looks for and how it judges severity after the closing '---'",
        )
    return Charter(id=pid, name=fields["name"], description=fields["description"], body=body)


def _package() -> Traversable:
    """The directory of the charters that ship with council."""
    return resources.files(__name__)


def _read(place: Traversable | Path, source: str, persona_id: str) -> Charter:
    """One charter file, decoded as UTF-8 and parsed (an unreadable file is malformed)."""
    try:
        text = place.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise MalformedCharter(source, "it is not UTF-8 text", "Save it as UTF-8") from None
    except OSError as err:
        raise MalformedCharter(
            source, f"it cannot be read ({err.strerror or err})", "Make the file readable"
        ) from None
    return parse_charter(text, source, persona_id=persona_id)


def _ids(directory: Traversable | Path) -> list[str]:
    """The persona ids of the charter files in one directory, sorted."""
    if not directory.is_dir():
        return []
    return sorted(
        entry.name.removesuffix(".md")
        for entry in directory.iterdir()
        if entry.name.endswith(".md")
        and entry.is_file()
        and PERSONA_ID.fullmatch(entry.name.removesuffix(".md"))
    )


def load_persona(persona_id: str, extra_dirs: Sequence[Path] = ()) -> Charter:
    """The charter of one persona: the first ``{persona_id}.md`` in the extra dirs, else
    the package's own.

    Why this order: a team can override a built-in lens (its own ``security.md``)
    without forking council. ``extra_dirs`` are searched in the order given (the
    roster's ``[council] persona_dirs``, already resolved by the caller). Raises
    :class:`~council.errors.PersonaNotFound` naming the id, every place looked and the
    personas that exist (also for an id that no file could carry, e.g. ``../x``), and
    :class:`~council.errors.MalformedCharter` for a charter that cannot be read.
    """
    places: list[str] = []
    if PERSONA_ID.fullmatch(persona_id):
        name = f"{persona_id}.md"
        for directory in extra_dirs:
            if not directory.is_dir():
                places.append(f"{directory} (no such directory)")
                continue
            places.append(str(directory))
            if (directory / name).is_file():
                return _read(directory / name, str(directory / name), persona_id)
        places.append(BUILT_IN)
        built_in = _package() / name
        if built_in.is_file():
            return _read(built_in, f"council/roster/personas/{name}", persona_id)
    known = sorted({i for d in (*extra_dirs, _package()) for i in _ids(d)})
    raise PersonaNotFound(persona_id, places, known)


def list_personas(extra_dirs: Sequence[Path] = ()) -> list[Charter]:
    """Every persona that :func:`load_persona` can find, by id, each charter read.

    A charter in an extra dir overrides the package's of the same id (as for
    :func:`load_persona`). Every ``*.md`` file whose name is a persona id is read, so a
    malformed one raises :class:`~council.errors.MalformedCharter` here too: a listing
    that skipped it would hide the file that will refuse a round. Directories that do
    not exist are skipped.
    """
    ids = sorted({i for d in (*extra_dirs, _package()) for i in _ids(d)})
    return [load_persona(i, extra_dirs) for i in ids]
