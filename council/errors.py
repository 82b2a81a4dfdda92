"""Errors the council raises for misuse and broken environments.

A failing reviewer is NOT an exception (its task returns an outcome); these classes are for
callers that must act differently::

    CouncilError
    ├── ConfigurationError            exit 2: fix the input and run again
    │   ├── RosterError               a roster field is wrong (names the field path)
    │   ├── PersonaNotFound           a roster names a persona no charter file provides
    │   ├── MalformedCharter          a persona's charter file cannot be read
    │   ├── IdentityRefused           a participant id would change meaning
    │   ├── RepositoryError           not a git repository, unknown ref
    │   ├── ChangeTooLarge            the diff or the tree is over a cap (names the knob)
    │   ├── ContextTooSmall           a context budget cannot hold the prompt's instructions
    │   └── AskRefused                a typed ask refused where it was raised (``code``)
    └── IncompleteError               exit 3: the council could not complete
        └── StoreUnavailable          Redis cannot be reached (URL shown without password)

Each class composes its message from the facts it keeps, ending with the way out.
Source: docs/style.md habit 5.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from council.model.participant import Identity


class CouncilError(Exception):
    """Base of every error the council raises on purpose."""

    exit_code: int = 2


class ConfigurationError(CouncilError):
    """The input (roster, refs, flags) is wrong; nothing was sent. Exit code 2."""

    exit_code = 2


class RosterError(ConfigurationError, ValueError):
    """A roster field is wrong. ``path`` names it (``reviewers[2].idle_ms``)."""

    def __init__(self, path: str, problem: str, fix: str) -> None:
        self.path, self.problem, self.fix = path, problem, fix
        super().__init__(f"roster: {path}: {problem}. {fix}")

    @staticmethod
    def field(where: str, key: str) -> str:
        """The path of ``key`` under ``where``, quoted as TOML writes a key that is not
        bare: ``limits.openai``, ``prices."openai:gpt-4.1"``."""
        bare = bool(key) and all(c.isascii() and (c.isalnum() or c in "_-") for c in key)
        return f"{where}.{key}" if bare else f'{where}."{key}"'


class PersonaNotFound(ConfigurationError, LookupError):
    """A participant names a persona that no charter file provides (docs/identity-and-clocks.md).

    ``places`` are where ``{persona}.md`` was looked for, in order (each extra directory,
    then the personas built into council; none when ``persona`` is not an id a file name
    could carry, e.g. ``../x``); ``known`` lists the persona ids found there,
    so the message can offer them. The round is refused before anything is sent.
    """

    def __init__(self, persona: str, places: Sequence[str], known: Sequence[str]) -> None:
        self.persona, self.places, self.known = persona, tuple(places), tuple(known)
        offer = f" Known personas: {', '.join(self.known)}." if self.known else ""
        if not self.places:
            super().__init__(
                f"persona {persona!r} is not a persona id (letters, digits, '_' and '-', "
                f"starting with a letter or digit), so no charter file can carry it. "
                f"Name a persona by its charter's file name without .md.{offer}"
            )
            return
        super().__init__(
            f"persona {persona!r} was not found: looked for {persona}.md in "
            f"{'; '.join(self.places)}. Write the charter {persona}.md in one of those "
            f"places (listed in [council] persona_dirs), or name a persona that exists."
            f"{offer}"
        )


class MalformedCharter(ConfigurationError, ValueError):
    """A persona's charter file is not a frontmatter block and a body.

    ``source`` names the file, ``problem`` what is wrong or missing, ``fix`` what to write.
    """

    def __init__(self, source: str, problem: str, fix: str) -> None:
        self.source, self.problem, self.fix = source, problem, fix
        super().__init__(f"persona charter {source}: {problem}. {fix}")


class IdentityRefused(ConfigurationError):
    """A participant id already has findings under another meaning (docs/identity-and-clocks.md).

    The message names the id, both meanings by every identity field that is set, and
    both ways out.
    """

    def __init__(self, participant: str, held: Identity, asked: Identity) -> None:
        self.participant, self.held, self.asked = participant, held, asked
        super().__init__(
            f"participant {participant!r} already has findings attributed to it as "
            f"({held.describe()}); this roster asks for ({asked.describe()}). "
            f"Use a new id for the new meaning, or release {participant!r} "
            f"(`council release SESSION {participant}`) and accept that its earlier findings no "
            f"longer say unambiguously who raised them."
        )


class RepositoryError(ConfigurationError):
    """The repository or a ref cannot be read."""

    def __init__(self, problem: str, fix: str) -> None:
        self.problem, self.fix = problem, fix
        super().__init__(f"{problem}. {fix}")


class ContextTooSmall(ConfigurationError):
    """A participant's context budget cannot hold its prompt's own instructions, the
    answer's room and the least diff a slice carries. ``participant``, ``budget`` and
    ``needs`` (tokens) name what to change."""

    def __init__(self, participant: str, budget: int, needs: int, why: str) -> None:
        self.participant, self.budget, self.needs = participant, budget, needs
        super().__init__(
            f"{participant}'s context budget of {budget} tokens cannot hold its prompt: "
            f"{why}, so it needs at least {needs} tokens. Set context_tokens = {needs} (or "
            f"more) on {participant} in the roster if its model takes that many, lower its "
            f"max_output_tokens, or shorten its persona."
        )


class ChangeTooLarge(ConfigurationError):
    """The diff or the tree (packed or unpacked) is larger than its cap, or the change
    lists more files than its cap.

    ``size`` is the size measured, in ``unit`` (bytes, or ``files`` for the list of the
    change's files); with ``at_least`` it is where reading stopped, once past the cap
    (the rest was never read), and the message says "at least". ``knob`` names the
    setting that raises the cap. A list of files is not narrowed by ``[paths]`` (every
    file is listed to be named), so its message says to split the change instead.
    """

    def __init__(
        self,
        what: str,
        size: int,
        cap: int,
        knob: str,
        *,
        at_least: bool = False,
        unit: str = "bytes",
    ) -> None:
        self.what, self.size, self.cap, self.knob = what, size, cap, knob
        self.at_least, self.unit = at_least, unit
        measured = f"at least {size}" if at_least else f"{size}"
        narrow = (
            "Narrow the change with [paths] include/exclude in the roster"
            if unit == "bytes"
            else "Split the change"
        )
        super().__init__(
            f"the {what} is {measured} {unit}, over the cap of {cap} {unit}. "
            f"{narrow}, or raise the cap with {knob}."
        )


class AskRefused(ConfigurationError, ValueError):
    """A typed human ask was refused at its source, when it was raised
    (docs/evidence-and-asks.md §2).

    ``code`` is what a program reads: ``shape`` (the component is malformed), ``no-store``
    (a ``props_ref`` with no artifact store attached) or ``unresolved-ref`` (a
    ``props_ref`` that is not an artifact of the run). ``door`` names where the ask came
    in (``council ask --check``, a reviewer's question, a policy's confirmation);
    ``description`` says what is wrong by the offending value's SHAPE ("a string of 3
    characters, all whitespace"), never by quoting it; ``fix`` replaces the code's usual
    way out when it does not fit. The raise fails instead of pausing: a question the
    screen cannot render is worse than none.
    """

    def __init__(self, code: str, door: str, description: str, fix: str | None = None) -> None:
        self.code, self.door, self.description = code, door, description
        way_out = fix if fix is not None else _ASK_FIXES.get(code, "")
        super().__init__(f"{door}: ask refused ({code}): {description}. {way_out}".rstrip())


_ASK_FIXES = {
    "shape": (
        'Give the component as {"component_id": "<registered id>"} plus, optionally, '
        '"props" (a JSON object of at most 16 KiB) and "props_ref" (an artifact ref); '
        "leave out a key rather than setting it to null, and add no other key."
    ),
    "no-store": (
        "Attach the run's artifact store, or pass the props inline as props "
        "(at most 16 KiB) instead of props_ref."
    ),
    "unresolved-ref": (
        "Store the props in this run's artifact store first and pass the ref it returned; "
        "a ref of another run, or of an expired one, never resolves."
    ),
}
"""The way out of each refusal code of :class:`AskRefused`."""


class IncompleteError(CouncilError):
    """The council could not complete (Redis unreachable, timeout, quorum). Exit code 3."""

    exit_code = 3


class StoreUnavailable(IncompleteError):
    """Redis cannot be reached. ``url`` is already redacted (no password)."""

    def __init__(self, url: str, reason: str, fix: str | None = None) -> None:
        self.url, self.reason = url, reason.rstrip(". ")
        way_out = fix or (
            "Start redis-server there, fix COUNCIL_REDIS_URL, or unset it to run in embedded mode."
        )
        super().__init__(f"cannot reach Redis at {url}: {self.reason}. {way_out}")
