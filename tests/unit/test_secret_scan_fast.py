"""The secret scan's prefilter is exact: leaving out, for a file, the detect-secrets
patterns and plugins that match none of its lines finds the same secrets, at the same
places, as running every plugin on every line (hypothesis, over lines mixing code,
secrets of many kinds and line-boundary cases). Source: docs/security.md "Secrets in the
change"."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from council.change.diff import Change
from council.change.secret_masks import digest
from tests.gitrepo import commit, new_repo
from workers.cli import main
from workers.coordinator import secret_scan

SECRETS = (
    "AKIA" + "IOSFODNN7EXAMPLE",
    'aws_secret_key = "' + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" + '"',
    "ghp_" + "a1B2" * 9,
    "glpat-" + "x9Y8z7W6v5U4t3S2r1Q0",
    'password = "hunter2hunter2"',
    "PWD: s3cr3tvalue",
    "-----BEGIN RSA " + "PRIVATE KEY-----",
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi",
    "xoxb-" + "123456789012-abcdefghij",
    "https://user:pa55word@example.com/path",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl",
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "AKC" + "abcdefghijklmn",
    'cloudant_password = "' + "a" * 24 + '"',
    'ibm_cloud_iam_api_key = "' + "b" * 44 + '"',
    "SG." + "a" * 22 + "." + "b" * 43,
    "1234567890:" + "A" * 35,
    "AccountKey=" + "a" * 88,
)
FILLER = ("def f(x):", "    return x * 2", "", "# a comment", "x = {'k': 1}", '"', "'", "=", ":")

piece = st.one_of(st.sampled_from(SECRETS), st.sampled_from(FILLER), st.text(max_size=30))
line = st.lists(piece, max_size=4).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(line, min_size=1, max_size=12), path=st.sampled_from(["a.py", "c.yaml", "x"]))
def test_the_prefilter_finds_what_every_plugin_on_every_line_finds(
    lines: list[str], path: str
) -> None:
    numbered = [(n, text) for n, text in enumerate(lines, 1)]
    plugins = secret_scan._plugins()
    fast = secret_scan._scan_lines(plugins, path, numbered, 0)
    slow = secret_scan._scan_lines(plugins, path, numbered, 0, prefilter=False)
    assert fast == slow


def test_a_file_without_secret_words_or_patterns_runs_no_plugin_line_by_line() -> None:
    text = "\n".join(f"def f{n}(x):\n    return x * {n}" for n in range(50))
    checks = secret_scan._checks(secret_scan._plugins(), text)
    assert all(c.regexes is not None for c in checks)  # no keyword, no private key
    assert len(checks) < len(secret_scan._plugins()) // 2


@settings(max_examples=10, deadline=None)
@example(prefix=30_000, secret=SECRETS[0], filler="notes \r")
@given(
    prefix=st.integers(min_value=0, max_value=45_000),
    secret=st.sampled_from(SECRETS[:4] + SECRETS[8:12]),
    filler=st.sampled_from(["x", "/", " ", "notes \r"]),
)
def test_a_secret_anywhere_on_a_long_line_is_found_at_its_place(
    prefix: int, secret: str, filler: str
) -> None:
    """A line past LINE_WHOLE_CHARS is scanned to its end in overlapping windows (it was
    cut at 20,000 characters: a key after them, or after 250 CR-separated lines, was
    shown unmasked), with the prefilter as without it."""
    text = (filler * prefix)[:prefix] + " " + secret + " end"
    plugins = secret_scan._plugins()
    fast = secret_scan._scan_lines(plugins, "notes.txt", [(1, text)], 0)
    slow = secret_scan._scan_lines(plugins, "notes.txt", [(1, text)], 0, prefilter=False)
    assert fast == slow
    at, end = prefix + 1, prefix + 1 + len(secret)
    assert any(min(s.end, end) - max(s.start, at) >= 8 for s in fast), fast


def test_undecodable_bytes_in_a_file_do_not_stop_the_scan() -> None:
    """An excluded file read with surrogateescape holding a bad byte beside a secret: the
    secret is found at its place (detect-secrets raised UnicodeEncodeError, and every
    review of the change crashed)."""
    text = 'x = 1\npassword = "hunter2\udcffhunter2"\n'
    spans = secret_scan.find_secrets(Change(files=()), [("docs/notes.txt", text)])
    (span,) = spans
    assert (span.path, span.line) == ("docs/notes.txt", 2)
    assert "\udcff" in text.split("\n")[1][span.start : span.end]
    assert span.digest == digest(text.split("\n")[1][span.start : span.end])


def test_a_scan_past_its_budget_stops_the_review_naming_where_it_was() -> None:
    """The budget is checked between lines: a scan that ran out raises ScanOverBudget
    (exit 3, nothing sent), never returns what it found so far as if it were all."""
    lines = "\n".join(f"line {n} = 1" for n in range(2_000))
    said = r"within -1 s \(it was at 'slow.py' line 1\)"
    with pytest.raises(secret_scan.ScanOverBudget, match=said) as caught:
        secret_scan.find_secrets(Change(files=()), [("slow.py", lines)], budget_s=-1.0)
    assert caught.value.exit_code == 3


def test_a_crawling_line_costs_a_bounded_share_of_the_budget() -> None:
    """The units a long line is scanned in are bounded: the whole line up to
    LINE_WHOLE_CHARS, then windows of WINDOW_CHARS, covering it to its end."""
    text = "/" * 200_000
    units = secret_scan._units(text)
    assert units[0] == (0, text[: secret_scan.LINE_WHOLE_CHARS])
    assert all(len(u) <= secret_scan.WINDOW_CHARS for _, u in units[1:])
    assert units[-1][0] + len(units[-1][1]) == len(text)
    covered = sorted((at, at + len(u)) for at, u in units)
    assert all(b[0] < a[1] - secret_scan.WINDOW_CHARS // 4 for a, b in itertools.pairwise(covered))


def test_a_review_whose_scan_runs_out_of_time_exits_3_having_sent_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """council review: the scan's budget spent, exit 3 with the reason, no run opened (no
    state file written), never an internal error."""
    repo = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(repo, {"app.py": "x = 1\ny = 2\n"}, "two")
    (tmp_path / "a.json").write_text('{"findings": []}', encoding="utf-8")
    rp = tmp_path / "roster.toml"
    rp.write_text('[[reviewers]]\nid = "rep"\nbackend = "replay"\nanswer = "a.json"\n')
    monkeypatch.setattr(secret_scan, "SCAN_BUDGET_S", -1.0)
    state = tmp_path / "state.json"
    argv = ["review", "--repo", str(repo), "--base", "HEAD~1", "--no-progress"]
    done = CliRunner().invoke(main, [*argv, "--state", str(state), "--roster", str(rp)])
    assert done.exit_code == 3, done.output
    assert "the secret scan of the change did not finish within -1 s" in done.output
    assert "internal error" not in done.output and not state.exists()
