"""Unit tests for the council prompt (council.roster.prompt)."""

from __future__ import annotations

import json
import re

import pytest

from council.change.diff import Change, parse_diff
from council.model.findings import LABELS, ChangeAnchor, Finding, LineAnchor, Origin
from council.model.participant import Participant
from council.roster.prompt import LENS, build_prompt, change_notes

DIFF = """\
diff --git a/src/app.py b/src/app.py
index 1111111..2222222 100644
--- a/src/app.py
+++ b/src/app.py
@@ -10,3 +10,4 @@ def main():
 a
-b
+B
+C
 d
diff --git a/old.txt b/old.txt
deleted file mode 100644
index abaddc0..0000000
--- a/old.txt
+++ /dev/null
@@ -1,2 +0,0 @@
-one
-two
diff --git a/logo.png b/logo.png
index f584f40..6bf43ff 100644
Binary files a/logo.png and b/logo.png differ
"""


@pytest.fixture
def change() -> Change:
    """A change with a modified, a deleted and a binary file."""
    return parse_diff(DIFF)


def _reviewer(**extra: object) -> Participant:
    """A replay reviewer participant."""
    return Participant.model_validate({"id": "hawk", "backend": "replay", **extra})


def _judge() -> Participant:
    """A replay judge participant."""
    return Participant(id="owl", role="judge", backend="replay")


def _sections(prompt: str) -> list[str]:
    """The `## ` section titles of a prompt, in order."""
    return re.findall(r"^## (.+)$", prompt, flags=re.MULTILINE)


def test_reviewer_prompt_sections_in_order(change: Change) -> None:
    """A reviewer's prompt: role, contract, recording, anchors, notes, change (every
    reviewer's, for the prefix caches), then who it is and its lens."""
    prompt = build_prompt(_reviewer(), change, change.text)
    assert prompt.startswith("# Code review council\n\nYou are one of several reviewers")
    assert _sections(prompt) == [
        "How to answer",
        "Record findings as you go",
        "Where a finding may anchor",
        "Notes",
        "The change",
        "Who you are",
        "What to look for",
    ]
    assert "## Who you are\n\nYou are reviewer `hawk` of this council.\n" in prompt
    assert prompt.endswith('answer as "How to answer" says: ONE JSON object.\n')


def test_prompt_is_deterministic(change: Change) -> None:
    """The same inputs give the same prompt, byte for byte."""
    one = build_prompt(_reviewer(), change, change.text, notes=["x"])
    two = build_prompt(_reviewer(), parse_diff(DIFF), DIFF, notes=["x"])
    assert one == two


def test_default_lens_lists_every_area(change: Change) -> None:
    """Without a persona the five default areas are listed."""
    prompt = build_prompt(_reviewer(), change, change.text)
    for title, _ in LENS:
        assert f"- {title}: " in prompt
    assert [t for t, _ in LENS] == ["Correctness", "Security", "Performance", "Tests", "API design"]


def test_persona_text_replaces_the_default_lens(change: Change) -> None:
    """A persona's charter is the lens, named after the persona; no default checklist."""
    prompt = build_prompt(
        _reviewer(persona="sec"), change, change.text, persona_text="  Hunt injection.\n"
    )
    assert "## Your lens (persona `sec`)\n\nHunt injection.\n" in prompt
    assert "What to look for" not in prompt and "- Correctness:" not in prompt


def test_blank_persona_text_keeps_the_default_lens(change: Change) -> None:
    """A blank charter is not a lens: the default checklist is used."""
    prompt = build_prompt(_reviewer(), change, change.text, persona_text="  ")
    assert "## What to look for" in prompt


def test_anchor_section_lists_files_and_ranges(change: Change) -> None:
    """Each changed file is listed with its new-side ranges, old side for deletions."""
    prompt = build_prompt(_reviewer(), change, change.text)
    assert '- "src/app.py": new lines 10-13; old lines 10-12\n' in prompt
    assert '- "old.txt" (deleted): old lines 1-2\n' in prompt
    assert '- "logo.png" (binary): the file as a whole\n' in prompt


def test_empty_change_says_so() -> None:
    """An empty change has no anchor list and no notes section."""
    prompt = build_prompt(_reviewer(), Change(), "")
    assert "The change has no files." in prompt
    assert "0 files changed, +0 -0 lines." in prompt
    assert "## Notes" not in prompt


def test_notes_derived_and_given_without_duplicates(change: Change) -> None:
    """Binary files are noted from the change; given notes follow, duplicates dropped."""
    given = [
        'binary file "logo.png": not shown',
        'non-UTF-8 file "y": shown with replacement characters',
        "the change edits council.toml; the base version is used",
    ]
    prompt = build_prompt(_reviewer(), change, change.text, notes=given)
    notes = prompt.split("## Notes\n\n", 1)[1].split("\n\n", 1)[0]
    assert notes.splitlines() == [f"- {n}" for n in given]


def test_change_notes(change: Change) -> None:
    """change_notes names binary, unreadable and non-UTF-8 files, in diff order."""
    odd = parse_diff(DIFF + "diff --git a/x b/x\n@@ nonsense @@\n")
    notes = change_notes(odd, non_utf8=["latin.txt"])
    assert notes[0] == 'binary file "logo.png": not shown'
    assert notes[1].startswith("file \"x\": hunk '@@ nonsense @@' could not be read")
    assert notes[2] == 'non-UTF-8 file "latin.txt": shown with replacement characters'
    assert change_notes(Change()) == []


def test_diff_is_fenced_and_summarized(change: Change) -> None:
    """The diff appears whole inside a diff fence, after a summary line."""
    prompt = build_prompt(_reviewer(), change, change.text)
    assert "3 files changed, +2 -3 lines.\n\n```diff\n" + DIFF + "```\n" in prompt


def test_fence_outgrows_backticks_in_the_diff() -> None:
    """A diff holding a backtick fence gets a longer fence, so it cannot close early."""
    text = DIFF.replace("+C\n", "+```` code\n")
    prompt = build_prompt(_reviewer(), parse_diff(text), text)
    assert "`````diff\n" + text + "`````\n" in prompt


def test_diff_without_final_newline_still_closes_the_fence(change: Change) -> None:
    """A diff text without a final newline still ends before the closing fence."""
    prompt = build_prompt(_reviewer(), change, DIFF.rstrip("\n"))
    assert DIFF + "```\n" in prompt


def test_answer_contract(change: Change) -> None:
    """The contract of docs/harvest.md §1: one object, kinds, nine labels, severities and
    confidence."""
    prompt = build_prompt(_reviewer(), change, change.text)
    contract = prompt.split("## How to answer\n\n", 1)[1]
    assert 'Nothing to say: `{"findings": []}`' in contract
    assert "prose around it is tolerated" in contract
    example = contract.split("```json\n", 1)[1].split("\n```", 1)[0]
    entry = json.loads(example)["findings"][0]
    assert entry["location"] == {
        "kind": "line",
        "file": "src/app.py",
        "start": 12,
        "end": 18,
        "side": "new",
    }
    assert "raisedBy" not in entry
    for word in ("`line`", "`file`", "`global`", "critical | medium | minor", "[0, 1]"):
        assert word in contract
    assert ", ".join(LABELS) in contract


def test_recording_instructions(change: Change) -> None:
    """The prompt says how to record: the tool, `council record`, or $COUNCIL_JOURNAL."""
    prompt = build_prompt(_reviewer(), change, change.text)
    assert "run `council record --json '<one finding>'`" in prompt
    assert "append one JSON object per line to the file named by $COUNCIL_JOURNAL" in prompt
    assert "`record_finding`" in prompt


def test_judge_prompt_shows_filed_findings_and_raised_by(change: Change) -> None:
    """A judge is told its role, shown the filed findings, and asked for raisedBy."""
    filed = [
        Finding(
            id=1,
            anchor=LineAnchor(path="src/app.py", line=11),
            label="issue",
            subject="B is wrong",
            origin=Origin(kind="reviewer", run_id="r1", participant="hawk"),
        ),
        Finding(id=2, anchor=ChangeAnchor(), label="praise", subject="nice", raised_by=("a", "b")),
    ]
    prompt = build_prompt(_judge(), change, change.text, filed=filed)
    assert prompt.startswith("# Code review council: judge `owl`")
    assert "The findings the reviewers filed" in _sections(prompt)
    rows = prompt.split("## The findings the reviewers filed", 1)[1].split("```json\n", 1)[1]
    first, second = rows.split("\n")[:2]
    assert json.loads(first)["origin"]["participant"] == "hawk"
    assert json.loads(second)["raised_by"] == ["a", "b"]
    example = prompt.split("## How to answer", 1)[1].split("```json\n", 1)[1].split("\n```")[0]
    assert json.loads(example)["findings"][0]["raisedBy"] == ["hawk", "owl"]


def test_judge_with_nothing_filed(change: Change) -> None:
    """A judge with no filed findings is told so."""
    prompt = build_prompt(_judge(), change, change.text)
    assert "The reviewers filed no findings." in prompt


def test_reviewer_is_never_shown_filed_findings(change: Change) -> None:
    """Filed findings are for the judge only."""
    filed = [Finding(anchor=ChangeAnchor(), label="note", subject="secret sauce")]
    prompt = build_prompt(_reviewer(), change, change.text, filed=filed)
    assert "secret sauce" not in prompt
