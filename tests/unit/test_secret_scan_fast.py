"""The secret scan's prefilter is exact: leaving out, for a file, the detect-secrets
patterns and plugins that match none of its lines finds the same secrets, at the same
places, as running every plugin on every line (hypothesis, over lines mixing code,
secrets of many kinds and line-boundary cases). Source: docs/security.md "Secrets in the
change"."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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
