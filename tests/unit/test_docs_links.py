"""The documentation's links hold: README.md and docs/*.md point at files that exist.

* Every relative Markdown link (``[text](path)``, ``[text](path#anchor)``, ``[text](#anchor)``
  and reference definitions ``[name]: path``) in README.md and docs/*.md names a file or
  folder of the checkout, and its ``#anchor`` names a heading of the target page.
* Anchors follow GitHub's rule for headings: the heading's text lowercased, punctuation
  dropped except ``-`` and ``_``, each space a ``-``; a repeated heading gets ``-1``, ``-2``.
* Every ``Source:`` line in the code (``council/``, ``reviewers/``, ``workers/``) that names
  ``docs/X.md`` names a page that exists.

Links inside fenced code blocks and inline code are not links and are not checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
CODE = ("council", "reviewers", "workers")

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_INLINE_CODE = re.compile(r"`+[^`]*`+")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_EXPLICIT_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def _prose(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a Markdown page outside fenced code blocks, numbered from 1."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (before duplicates are numbered)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text only
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor a page offers: its headings' slugs (repeats numbered) and explicit ids."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _prose(page.read_text(encoding="utf-8")):
        found.update(_EXPLICIT_ANCHOR.findall(line))
        heading = _HEADING.match(line)
        if heading is None:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> Iterator[tuple[int, str]]:
    """The relative link targets of a page (line number, target as written)."""
    for number, line in _prose(page.read_text(encoding="utf-8")):
        bare = _INLINE_CODE.sub("", line)
        targets = [m.group(1) for m in _LINK.finditer(bare)]
        reference = _REFERENCE.match(bare)
        if reference is not None:
            targets.append(reference.group(1))
        for target in targets:
            if target and not _EXTERNAL.match(target):
                yield number, target


def broken(page: Path) -> list[str]:
    """What is wrong with a page's relative links: one line per broken link."""
    problems: list[str] = []
    where = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name
    for number, target in links(page):
        path_part, _, anchor = target.partition("#")
        goal = (page.parent / path_part).resolve() if path_part else page
        if not goal.exists():
            problems.append(f"{where}:{number}: {target}: no such file")
            continue
        if anchor and goal.suffix == ".md" and anchor not in anchors(goal):
            problems.append(f"{where}:{number}: {target}: no heading #{anchor} there")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_names_an_existing_file_and_heading(page: Path) -> None:
    """A relative link leads to a file of the checkout, and its anchor to a heading there."""
    assert broken(page) == []


def test_the_checker_sees_a_broken_file_and_a_broken_anchor(tmp_path: Path) -> None:
    """The check can fail: a missing file and a missing heading are both reported, a link
    in a code block or inline code is not a link, and a repeated heading gets ``-1``."""
    page = ROOT / "docs" / "architecture.md"
    assert "the-run-lifecycle" in anchors(page)
    sample = tmp_path / "sample.md"
    sample.write_text(
        "# Title\n\n## Two: `words`, here!\n\n## Two: `words`, here!\n\n"
        "[a](#title) [b](#two-words-here-1) [c](nowhere.md) [d](#no-such)\n"
        "`[e](nowhere.md)`\n\n```\n[f](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    targets = [t for _, t in links(sample)]
    assert targets == ["#title", "#two-words-here-1", "nowhere.md", "#no-such"]
    assert anchors(sample) == {"title", "two-words-here", "two-words-here-1"}
    assert broken(sample) == [
        "sample.md:7: nowhere.md: no such file",
        "sample.md:7: #no-such: no heading #no-such there",
    ]
    assert slug("1.12 Testing and the embedded worker") == "112-testing-and-the-embedded-worker"
    assert slug("Reports, the CLI and the gate") == "reports-the-cli-and-the-gate"


def _sources() -> Iterator[tuple[str, str]]:
    """Each docs page a ``Source:`` line of the code names: (file:line, docs/X.md)."""
    for package in CODE:
        for module in sorted((ROOT / package).rglob("*.py")):
            text = module.read_text(encoding="utf-8")
            for found in re.finditer(r"Source:", text):
                # A Source: line may wrap: read on to the end of its paragraph.
                rest = text[found.end() :]
                paragraph = re.split(r"\n\s*\n|\"\"\"", rest, maxsplit=1)[0]
                number = text.count("\n", 0, found.start()) + 1
                for page in re.findall(r"docs/[\w.-]+?\.md", paragraph):
                    yield f"{module.relative_to(ROOT)}:{number}", page


def test_every_source_line_names_an_existing_docs_page() -> None:
    """``Source: docs/X.md ...`` in a docstring or comment names a page that exists."""
    named = list(_sources())
    assert len(named) > 100  # the code cites its design pages: the scan finds them
    missing = [f"{where}: {page}" for where, page in named if not (ROOT / page).is_file()]
    assert missing == []
