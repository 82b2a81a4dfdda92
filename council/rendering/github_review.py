"""The GitHub pull-request review: ONE review, with line comments where lines exist.

The body of ``POST /repos/{owner}/{repo}/pulls/{number}/reviews``::

    {"commit_id"?: <head>, "body": <Markdown: the verdict, every finding not commented>,
     "event": "REQUEST_CHANGES" | "COMMENT", "comments": [{"path", "line",
     "side": "RIGHT" | "LEFT", "start_line"?, "start_side"?, "body"}]}

GitHub refuses the WHOLE review over one comment on a line its diff does not show, so only
a landed line anchor (:func:`council.change.diff.landing`, not in ``off_diff``) is
commented; the rest goes in the body, never away. Source: docs/architecture.md (reports);
docs/harvest.md §2, §8; GitHub REST "Create a review for a pull request".
"""

from __future__ import annotations

import json
from typing import Any, Literal

from council.change.diff import Change, landing
from council.change.secret_masks import MASK
from council.model.findings import Finding, LineAnchor, severity_rank
from council.model.report import CouncilReport
from council.rendering.agreement import discussion_cut, other_tellings, place_text
from council.rendering.escape import block, code, for_forge, inline, no_controls_json
from council.rendering.evidence_text import evidence_line
from council.rendering.finding_text import gating_ids, label_text, raised_text
from council.rendering.markdown import render_markdown
from council.rendering.ranked import leading_ids
from council.round.gate import gate_tripped

MAX_COMMENTS = 50
"""Line comments in one review at most; the rest are listed in the body. Large reviews
are refused or time out on GitHub (and bury the conversation); the most severe
findings are commented first, then the earliest filed."""

SUBJECT_CHARS = 1_000
"""Longest subject shown in a line comment; a subject is meant to be one line, and a
longer one must not push a comment past GitHub's body limit."""

BODY_UNITS = 65_536
"""GitHub's limit on a review or comment body, counted in UTF-16 code units (as GitHub's
JavaScript-side count does: an emoji is two)."""

SIDES = {"new": "RIGHT", "old": "LEFT"}
"""GitHub's name for each side of the diff."""

_CUT_NOTE = (
    "\n\n*Cut here: GitHub limits a review body to 65,536 characters. "
    "The full report is in the council's Markdown and JSON outputs.*\n"
)
_CUT_DISCUSSION = "\n\n… (cut: the full discussion is in the council report)"


Post = Literal["leading", "all"]
"""``--post``: line comments on the leading findings only (the default), or on all."""

POSTS: tuple[Post, ...] = ("leading", "all")


def posted_only(
    report: CouncilReport, placed: list[tuple[Finding, dict[str, Any]]], post: Post
) -> tuple[list[tuple[Finding, dict[str, Any]]], int]:
    """The placed comments ``post`` keeps, and how many less likely ones it left out."""
    if post == "all":
        return placed, 0
    leading = leading_ids(report)
    kept = [(f, c) for f, c in placed if f.id is None or f.id in leading]
    return kept, len(placed) - len(kept)


def render_github_review(
    report: CouncilReport,
    *,
    change: Change | None = None,
    post: Post = "leading",
) -> str:
    """The review as JSON text (see :func:`render_github_review_with_cuts`)."""
    text, _ = render_github_review_with_cuts(report, change=change, post=post)
    return text


def render_github_review_with_cuts(
    report: CouncilReport,
    *,
    change: Change | None = None,
    post: Post = "leading",
) -> tuple[str, list[str]]:
    """The review as JSON text (2-space indent, newline-terminated), and the cuts made.

    ``event`` is ``REQUEST_CHANGES`` when :func:`council.round.gate.gate_tripped` finds a
    blocking finding at ``gate.fail_on``, else ``COMMENT``; an incomplete council never requests
    changes (its exit 3 already fails the check). ``body`` is :func:`render_markdown` with the
    commented findings counted, not repeated. Pass ``change`` when at hand: landing is checked
    against it too, and an old-side comment on a renamed file is addressed by the new path,
    which only it knows (without it, such findings stay in the body). The cuts: a sentence
    each (comments past :data:`MAX_COMMENTS`, a body over :data:`BODY_UNITS` units), said in
    the body too. ``post``: ``leading`` (the default) comments only on the findings that
    lead the report (:func:`~council.rendering.ranked.leading_ids`: gating, at or above
    ``likely_at``, or unranked), the rest listed in the body; ``all`` on every one.
    """
    seen, gating = frozenset(report.seen), gating_ids(report)
    placed: list[tuple[Finding, dict[str, Any]]] = []
    for finding in report.findings:
        comment = _comment(report, finding, seen, change, finding.id in gating)
        if comment is not None:
            placed.append((finding, comment))
    placed, unlikely = posted_only(report, placed, post)
    ranked = sorted(range(len(placed)), key=lambda i: (-severity_rank(placed[i][0].severity), i))
    chosen = sorted(ranked[:MAX_COMMENTS])
    posted = {ident for i in chosen if (ident := placed[i][0].id) is not None}
    body = render_markdown(report, posted=posted)
    review: dict[str, Any] = {}
    if report.head:
        review["commit_id"] = report.head
    review["body"] = fit_body(for_forge(body))
    review["event"] = "REQUEST_CHANGES" if gate_tripped(report) else "COMMENT"
    review["comments"] = [placed[i][1] for i in chosen]
    cuts: list[str] = []
    if unlikely:
        cuts.append(
            f"github-review: {unlikely} less likely finding(s) on the diff (below likelihood "
            f"{report.likely_at:.2f}) are listed in the body, not line comments (--post all "
            "comments on them)"
        )
    if len(placed) > len(chosen):
        cuts.append(
            f"github-review: {len(chosen)} of the {len(placed)} findings on the diff are "
            f"line comments (GitHub reviews take at most {MAX_COMMENTS}); the other "
            f"{len(placed) - len(chosen)}, least severe first, are listed in the body"
        )
    if review["body"] != for_forge(body):
        cuts.append(
            f"github-review: the review body was cut to GitHub's limit of {BODY_UNITS:,} "
            "characters; the whole report is in the Markdown and JSON outputs"
        )
    return no_controls_json(json.dumps(review, indent=2, ensure_ascii=False)) + "\n", cuts


def _comment(
    report: CouncilReport,
    finding: Finding,
    seen: frozenset[int],
    change: Change | None,
    gates: bool,
) -> dict[str, Any] | None:
    """The line comment for a finding (``gates``: it is among those the gate trips on),
    or None when it belongs in the body."""
    anchor = finding.anchor
    ident = finding.id
    if not isinstance(anchor, LineAnchor) or not anchor.path or ident is None:
        return None
    if (
        ident in report.off_diff
        or ident in report.suppressed
        or ident in report.filtered
        or ident in seen
    ):
        return None
    path = _pull_request_path(anchor, change)
    if path is None or MASK in path:  # a path holding a masked secret is no file of
        return None  # the pull request's: GitHub would refuse the review; the body has it
    side = SIDES[anchor.side]
    comment: dict[str, Any] = {"path": path, "line": anchor.line, "side": side}
    if anchor.start_line is not None and anchor.start_line < anchor.line:
        comment["start_line"] = anchor.start_line
        comment["start_side"] = side
    comment["body"] = comment_body(finding, gates)
    return comment


def _pull_request_path(anchor: LineAnchor, change: Change | None) -> str | None:
    """The path GitHub knows the anchored file by, or None when it cannot be trusted."""
    if change is None:
        return anchor.path if anchor.side == "new" else None
    if landing(change, anchor) is not None:
        return None
    for changed in change.files:
        if changed.side_path(anchor.side) == anchor.path:
            return changed.path
    return None


def comment_body(finding: Finding, gates: bool | None = None) -> str:
    """A finding as a Conventional Comments line comment, under GitHub's body limit.

    Shape: ``**issue (blocking):** subject`` (the label as
    :func:`~council.rendering.finding_text.label_text` decorates it: ``gates`` says whether
    the finding gates), the discussion as a blockquote (text as text, code blocks in
    council's own fences: :func:`~council.rendering.escape.block`), then a line
    ``raised by hawk, owl (2 reviewers agree) · severity critical · council finding
    12`` (and, for a finding showing scripts, ``shown scripts: block 1 ✔ ran this turn,
    exit 1 (call 3)`` and why a policy held its severity). A discussion too long for the
    limit is cut with a note. Every part is :func:`~council.rendering.escape.for_forge`
    text (no mention, no raw control or bidirectional character), measured after
    escaping. Why: the comment must read like the report, and one oversized comment
    must not sink the review. Source: docs/harvest.md §8 (raised_by is
    agreement), docs/evidence-and-asks.md §1 (shown scripts).
    """
    label = label_text(finding, gates)
    subject = finding.subject
    if len(subject) > SUBJECT_CHARS:
        subject = subject[:SUBJECT_CHARS] + "… (subject cut; the whole of it is in the report)"
    head = for_forge(f"**{label}:** {inline(subject)}")
    facts = [text for text in (raised_text(finding),) if text]
    if finding.severity is not None:
        facts.append(f"severity {finding.severity}")
    if finding.confidence is not None:
        facts.append(f"confidence {finding.confidence:.2f}")
    if finding.id is not None:
        facts.append(f"council finding {finding.id}")
    shown = evidence_line(finding.evidence)
    if shown:
        facts.append(shown)
    if finding.severity_note:
        facts.append(inline(finding.severity_note))
    tail = for_forge("\n\n" + " · ".join(facts)) if facts else ""
    tail = _other_tellings(finding) + tail
    quoted = _quote(finding.discussion)
    spare = BODY_UNITS - _units(head) - _units(tail) - 2
    if _units(quoted) > spare:
        quoted = _cut_quote(finding.discussion, spare)
    return head + ("\n\n" + quoted if quoted else "") + tail


def _other_tellings(finding: Finding) -> str:
    """The other reviewers' tellings of a consolidated finding, folded into its comment:
    ``Also told by owl (`app.py:12`): subject`` and its discussion quoted (each cut to
    :data:`~council.rendering.agreement.TELLING_CHARS`); "" for a finding of one telling."""
    parts: list[str] = []
    for member in other_tellings(finding):
        facts = code(place_text(member)) + (f", {member.severity}" if member.severity else "")
        head = f"Also told by {inline(member.participant)} ({facts}): {inline(member.subject)}"
        said = _quote(discussion_cut(member))
        parts.append("\n\n" + for_forge(head) + ("\n\n" + said if said else ""))
    return "".join(parts)


def _cut_quote(discussion: str, spare: int) -> str:
    """The discussion quoted and cut, with a note, to at most ``spare`` UTF-16 units.

    What quoting adds to the whole discussion bounds what it adds to a prefix, so the
    first guess fits; the loop only guards against escaping that differs in a prefix.
    """
    overhead = _units(_quote(discussion)) - _units(discussion)
    room = spare - overhead - _units(_quote(_CUT_DISCUSSION)) - 2
    keep = _shorten(discussion, max(room, 0))
    quoted = _quote(keep + _CUT_DISCUSSION)
    while _units(quoted) > spare and keep:
        keep = keep[: len(keep) * 9 // 10]
        quoted = _quote(keep + _CUT_DISCUSSION)
    return quoted


def _quote(text: str) -> str:
    if not text.strip():
        return ""
    return for_forge("\n".join(f"> {line}" if line.strip() else ">" for line in block(text)))


def _units(text: str) -> int:
    """Length in UTF-16 code units, the way GitHub counts a body's characters."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _shorten(text: str, units: int) -> str:
    """The longest prefix of ``text`` that is at most ``units`` UTF-16 units long."""
    end = min(len(text), units)
    while end > 0 and _units(text[:end]) > units:
        end -= max(1, (_units(text[:end]) - units) // 2)
    return text[:end]


def fit_body(body: str, limit: int = BODY_UNITS) -> str:
    """The body, cut at a block boundary with a note when it is over GitHub's limit.

    Public because an issue comment (the summary ``council publish`` keeps up to date)
    has the same 65,536-unit limit as a review body; a check run's summary and text
    have 65,535 (``limit``). Never raises.
    """
    if _units(body) <= limit:
        return body
    closing = "\n\n</details>"
    prefix = _shorten(body, limit - _units(_CUT_NOTE) - _units(closing))
    boundary = prefix.rfind("\n\n")
    kept = prefix[:boundary] if boundary > 0 else prefix
    lines = kept.split("\n")
    if lines.count("<details>") > lines.count("</details>"):
        kept += closing
    return kept + _CUT_NOTE
