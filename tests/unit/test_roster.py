"""Unit tests for reading a roster's TOML text (council.roster)."""

from __future__ import annotations

import pytest

from council.errors import RosterError
from council.model.participant import Clocks
from council.roster import DEFAULT_MAX_CHANGE_BYTES, DEFAULT_MAX_TREE_BYTES, parse_roster

HAWK = """
[[reviewers]]
id = "hawk"
backend = "openai"
model = "ember-14b"
"""

FULL = """
[council]
backstop_ms = 600000
idle_ms = 120000
answer_ms = 0
max_change_bytes = 2000
max_tree_bytes = 4000
quorum = 2

[paths]
include = ["src/**"]
exclude = ["vendor/**", "*.lock"]

[[reviewers]]
id = "hawk"
backend = "openai"
model = "ember-14b"
thinking_level = "low"
tools = ["read_file", "grep"]
persona = "security"
base_url = "http://localhost:11434/v1"
api_key_env = "OLLAMA_KEY"
idle_ms = 60000

[[reviewers]]
id = "ruff.sarif"
backend = "sarif"
program = "ruff"
args = ["check", "--output-format", "sarif", ""]

[[reviewers]]
id = "tape"
backend = "replay"
answer = "recordings/tape.txt"
journal = "recordings/tape.jsonl"
latency_ms = 0

[judge]
id = "owl"
backend = "anthropic"
model = "quill-max"
backstop_ms = 1200000
"""


def _refusal(text: str) -> RosterError:
    """The RosterError that parsing ``text`` raises."""
    with pytest.raises(RosterError) as caught:
        parse_roster(text, "council.toml")
    return caught.value


def test_full_roster_reads_every_field() -> None:
    """A roster using every table and key reads into the expected Roster."""
    roster = parse_roster(FULL, "council.toml")
    assert [p.id for p in roster.reviewers] == ["hawk", "ruff.sarif", "tape"]
    hawk, ruff, tape = roster.reviewers
    assert (hawk.backend, hawk.model, hawk.thinking_level) == ("openai", "ember-14b", "low")
    assert hawk.tools == ("read_file", "grep") and hawk.persona == "security"
    assert hawk.options == {"base_url": "http://localhost:11434/v1", "api_key_env": "OLLAMA_KEY"}
    assert hawk.clocks == Clocks(backstop_ms=600_000, idle_ms=60_000, answer_ms=0)
    assert ruff.options == {"program": "ruff", "args": ["check", "--output-format", "sarif", ""]}
    assert tape.options == {
        "answer": "recordings/tape.txt",
        "journal": "recordings/tape.jsonl",
        "latency_ms": 0,
    }
    assert roster.judge is not None and roster.judge.role == "judge"
    assert roster.judge.clocks == Clocks(backstop_ms=1_200_000, idle_ms=120_000, answer_ms=0)
    assert roster.clocks == Clocks(backstop_ms=600_000, idle_ms=120_000, answer_ms=0)
    assert (roster.include, roster.exclude) == (("src/**",), ("vendor/**", "*.lock"))
    assert (roster.max_change_bytes, roster.max_tree_bytes, roster.quorum) == (2000, 4000, 2)
    assert roster.source == "council.toml"
    assert roster.longest_backstop_ms == 1_200_000
    assert [(role, p.id) for role, p in roster.claims()] == [
        ("reviewer", "hawk"),
        ("reviewer", "ruff.sarif"),
        ("reviewer", "tape"),
        ("judge", "owl"),
    ]


def test_minimal_roster_gets_defaults() -> None:
    """One reviewer and nothing else: default clocks, caps, no judge, no paths."""
    roster = parse_roster(HAWK, "council.toml")
    assert roster.judge is None and roster.quorum is None
    assert (roster.include, roster.exclude) == ((), ())
    assert (roster.max_change_bytes, roster.max_tree_bytes) == (
        DEFAULT_MAX_CHANGE_BYTES,
        DEFAULT_MAX_TREE_BYTES,
    )
    assert roster.reviewers[0].clocks == Clocks()
    assert roster.reviewers[0].role == "reviewer" and roster.reviewers[0].options == {}


def test_base_dir_goes_to_path_backends_only() -> None:
    """base_dir is stored for backends that read files, not for model backends."""
    roster = parse_roster(FULL, "council.toml", base_dir="/repo")
    hawk, ruff, tape = roster.reviewers
    assert "base_dir" not in hawk.options
    assert ruff.options["base_dir"] == "/repo" and tape.options["base_dir"] == "/repo"


def test_syntax_error_names_line_and_column() -> None:
    """A TOML slip is refused with the source, line and column as its path."""
    err = _refusal('[[reviewers]]\nid = "hawk"\nbackend = openai\n')
    assert err.path == "council.toml:3:11"
    assert "TOML" in err.problem


def test_syntax_error_at_end_of_document() -> None:
    """An unterminated string is refused at the end of the document."""
    assert _refusal('[[reviewers]]\nid = "hawk').path == "council.toml:end"


def test_unknown_key_suggests_the_close_one() -> None:
    """A misspelt key is refused at its path, suggesting the key meant and listing all."""
    err = _refusal(HAWK + "idle_sm = 60000\n")
    assert err.path == "reviewers[0].idle_sm"
    assert "'idle_ms'" in err.fix and "thinking_level" in err.fix


def test_option_of_another_backend_says_whose_it_is() -> None:
    """A command option in an openai table is refused, naming the backends that own it."""
    err = _refusal(HAWK + 'program = "x"\n')
    assert err.path == "reviewers[0].program"
    assert "command and sarif" in err.fix


def test_api_key_in_roster_is_refused() -> None:
    """A secret written in the roster is refused, pointing to api_key_env."""
    err = _refusal(HAWK + 'api_key = "sk-123"\n')
    assert err.path == "reviewers[0].api_key"
    assert "api_key_env" in err.fix and "sk-123" not in str(err)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("[reviewer]\nid = 'a'\n" + HAWK, "reviewer"),
        ("title = 'x'\n" + HAWK, "title"),
        ("[council]\nmax_diff = 1\n" + HAWK, "council.max_diff"),
        ("[paths]\nincludes = []\n" + HAWK, "paths.includes"),
        (
            "[judge]\nid = 'owl'\nbackend = 'openai'\nmodel = 'm'\nrole = 'judge'\n" + HAWK,
            "judge.role",
        ),
    ],
)
def test_unknown_tables_and_keys(text: str, path: str) -> None:
    """Unknown tables and keys anywhere are refused at their path."""
    assert _refusal(text).path == path


def test_no_reviewers_at_all() -> None:
    """A roster without [[reviewers]] is refused at 'reviewers'."""
    err = _refusal("[council]\nidle_ms = 60000\n")
    assert err.path == "reviewers"
    assert "[[reviewers]]" in err.fix


def test_reviewers_written_as_one_table() -> None:
    """[reviewers] instead of [[reviewers]] is refused with the right spelling."""
    err = _refusal("[reviewers]\nid = 'hawk'\nbackend = 'command'\nprogram = 'x'\n")
    assert err.path == "reviewers" and "[[reviewers]]" in err.fix


def test_empty_reviewers_array() -> None:
    """reviewers = [] is no reviewer either."""
    assert _refusal("reviewers = []\n").path == "reviewers"


def test_reviewer_that_is_not_a_table() -> None:
    """An array item that is not a table is refused at its index."""
    assert _refusal("reviewers = ['hawk']\n").path == "reviewers[0]"


def test_two_judges() -> None:
    """[[judge]] (an array) is refused: there is one judge."""
    assert _refusal(HAWK + "[[judge]]\nid = 'owl'\nbackend = 'command'\nprogram = 'x'\n").path == (
        "judge"
    )


def _second(body: str) -> str:
    """A roster whose second reviewer (reviewers[1]) has ``body``."""
    return HAWK + "[[reviewers]]\n" + body


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ("backend = 'openai'\nmodel = 'm'\n", "reviewers[1].id"),
        ("id = ''\nbackend = 'openai'\nmodel = 'm'\n", "reviewers[1].id"),
        ("id = '   '\nbackend = 'openai'\nmodel = 'm'\n", "reviewers[1].id"),
        ("id = 7\nbackend = 'openai'\nmodel = 'm'\n", "reviewers[1].id"),
        ("id = 'hawk'\nbackend = 'openai'\nmodel = 'm'\n", "reviewers[1].id"),
        ("id = '-hawk'\nbackend = 'openai'\nmodel = 'm'\n", "reviewers[1].id"),
        ("id = 'a b'\nbackend = 'openai'\nmodel = 'm'\n", "reviewers[1].id"),
        ("id = 'a/b'\nbackend = 'openai'\nmodel = 'm'\n", "reviewers[1].id"),
        ("id = '" + "a" * 65 + "'\nbackend = 'openai'\nmodel = 'm'\n", "reviewers[1].id"),
        ("id = 'owl'\n", "reviewers[1].backend"),
        ("id = 'owl'\nbackend = 'gemini'\n", "reviewers[1].backend"),
        ("id = 'owl'\nbackend = 'OpenAI'\nmodel = 'm'\n", "reviewers[1].backend"),
        ("id = 'owl'\nbackend = 'openai'\n", "reviewers[1].model"),
        ("id = 'owl'\nbackend = 'anthropic'\nmodel = ' '\n", "reviewers[1].model"),
        ("id = 'owl'\nbackend = 'openai'\nmodel = 3\n", "reviewers[1].model"),
        (
            "id = 'owl'\nbackend = 'openai'\nmodel = 'm'\nthinking_level = 'max'\n",
            "reviewers[1].thinking_level",
        ),
        (
            "id = 'owl'\nbackend = 'openai'\nmodel = 'm'\nthinking_level = 2\n",
            "reviewers[1].thinking_level",
        ),
        ("id = 'owl'\nbackend = 'openai'\nmodel = 'm'\ntools = []\n", "reviewers[1].tools"),
        ("id = 'owl'\nbackend = 'openai'\nmodel = 'm'\ntools = 'grep'\n", "reviewers[1].tools"),
        (
            "id = 'owl'\nbackend = 'openai'\nmodel = 'm'\ntools = ['grep', 3]\n",
            "reviewers[1].tools[1]",
        ),
        ("id = 'owl'\nbackend = 'openai'\nmodel = 'm'\ntools = ['  ']\n", "reviewers[1].tools[0]"),
        ("id = 'owl'\nbackend = 'openai'\nmodel = 'm'\npersona = ''\n", "reviewers[1].persona"),
        (
            "id = 'owl'\nbackend = 'openai'\nmodel = 'm'\nbase_url = 'localhost:1'\n",
            "reviewers[1].base_url",
        ),
        (
            "id = 'owl'\nbackend = 'openai'\nmodel = 'm'\napi_key_env = 'sk-abc'\n",
            "reviewers[1].api_key_env",
        ),
        ("id = 'owl'\nbackend = 'command'\n", "reviewers[1].program"),
        ("id = 'owl'\nbackend = 'sarif'\nprogram = ''\n", "reviewers[1].program"),
        ("id = 'owl'\nbackend = 'command'\nprogram = 'x'\nargs = '--json'\n", "reviewers[1].args"),
        (
            "id = 'owl'\nbackend = 'command'\nprogram = 'x'\nargs = ['a', 1]\n",
            "reviewers[1].args[1]",
        ),
        ("id = 'owl'\nbackend = 'replay'\n", "reviewers[1].answer"),
        ("id = 'owl'\nbackend = 'replay'\nanswer = 'a'\njournal = 5\n", "reviewers[1].journal"),
        (
            "id = 'owl'\nbackend = 'replay'\nanswer = 'a'\nlatency_ms = -1\n",
            "reviewers[1].latency_ms",
        ),
        (
            "id = 'owl'\nbackend = 'replay'\nanswer = 'a'\nlatency_ms = 1.5\n",
            "reviewers[1].latency_ms",
        ),
        (
            "id = 'owl'\nbackend = 'replay'\nanswer = 'a'\nlatency_ms = true\n",
            "reviewers[1].latency_ms",
        ),
        (
            "id = 'owl'\nbackend = 'replay'\nanswer = 'a'\nbase_url = 'http://x'\n",
            "reviewers[1].base_url",
        ),
        ("id = 'owl'\nbackend = 'command'\nprogram = 'x'\nidle_ms = 30\n", "reviewers[1].idle_ms"),
        (
            "id = 'owl'\nbackend = 'command'\nprogram = 'x'\n"
            "backstop_ms = 60000\nidle_ms = 70000\n",
            "reviewers[1].idle_ms",
        ),
        (
            "id = 'owl'\nbackend = 'command'\nprogram = 'x'\nanswer_ms = 2.0\n",
            "reviewers[1].answer_ms",
        ),
    ],
)
def test_bad_reviewer_field_names_its_path(body: str, path: str) -> None:
    """Each bad field of the second reviewer is refused at reviewers[1].<field>."""
    err = _refusal(_second(body))
    assert err.path == path
    assert err.fix


def test_unknown_backend_lists_the_five() -> None:
    """The fix for an unknown backend names every backend."""
    err = _refusal(_second("id = 'owl'\nbackend = 'gemini'\n"))
    for backend in ("openai", "anthropic", "command", "replay", "sarif"):
        assert backend in err.fix


def test_duplicate_id_names_the_first_holder() -> None:
    """A repeated id says which entry already uses it."""
    err = _refusal(_second("id = 'hawk'\nbackend = 'command'\nprogram = 'x'\n"))
    assert "reviewers[0]" in err.problem


def test_judge_id_must_differ_from_reviewers() -> None:
    """A judge with a reviewer's id is refused at judge.id."""
    err = _refusal(HAWK + "[judge]\nid = 'hawk'\nbackend = 'openai'\nmodel = 'other'\n")
    assert err.path == "judge.id"


@pytest.mark.parametrize(
    ("council", "path"),
    [
        ("idle_ms = 15", "council.idle_ms"),
        ("backstop_ms = '45m'", "council.backstop_ms"),
        ("backstop_ms = 60000\nidle_ms = 90000", "council.idle_ms"),
        ("max_change_bytes = 0", "council.max_change_bytes"),
        ("max_tree_bytes = 1.5", "council.max_tree_bytes"),
        ("max_tree_bytes = false", "council.max_tree_bytes"),
        ("quorum = -1", "council.quorum"),
        ("quorum = 2", "council.quorum"),
    ],
)
def test_bad_council_field_names_its_path(council: str, path: str) -> None:
    """Each bad [council] value is refused at council.<field>."""
    assert _refusal("[council]\n" + council + "\n" + HAWK).path == path


@pytest.mark.parametrize(
    ("paths", "path"),
    [
        ("include = 'src/**'", "paths.include"),
        ("exclude = ['ok', '']", "paths.exclude[1]"),
        ("exclude = [1]", "paths.exclude[0]"),
    ],
)
def test_bad_paths_name_their_path(paths: str, path: str) -> None:
    """Bad [paths] patterns are refused at paths.<key>[i]."""
    assert _refusal("[paths]\n" + paths + "\n" + HAWK).path == path


def test_quorum_zero_switches_the_count_off() -> None:
    """quorum = 0 is accepted (no count); the default is 1."""
    assert parse_roster("[council]\nquorum = 0\n" + HAWK, "r").quorum == 0


def test_council_written_as_value_not_table() -> None:
    """council = 1 is refused: [council] is a table."""
    assert _refusal("council = 1\n" + HAWK).path == "council"


def test_round_idle_clamped_to_short_participant_backstop() -> None:
    """Across tables the round's idle clock is clamped to a participant's backstop."""
    roster = parse_roster("[council]\nidle_ms = 600000\n" + HAWK + "backstop_ms = 60000\n", "r")
    assert roster.reviewers[0].clocks.idle_ms == 60_000


def test_seconds_slip_says_milliseconds() -> None:
    """A clock of 30 in a reviewer table says milliseconds, not seconds."""
    err = _refusal(HAWK + "idle_ms = 30\n")
    assert err.path == "reviewers[0].idle_ms"
    assert "milliseconds, not seconds" in err.fix
    assert "reviewers[0].idle_ms" in str(err)


SARIF = "id = 'lint'\nbackend = 'sarif'\nprogram = 'ruff'\n"
"""The start of a sarif reviewer table; tests append scope and levels."""


def test_sarif_scope_and_levels_are_read() -> None:
    """A sarif reviewer's scope and levels are kept in its options as written."""
    roster = parse_roster(_second(SARIF + "scope = 'files'\nlevels = { error = 'medium' }\n"), "x")
    options = roster.reviewers[1].options
    assert options == {"program": "ruff", "scope": "files", "levels": {"error": "medium"}}


@pytest.mark.parametrize(
    ("extra", "path"),
    [
        ("scope = 'hunks'\n", "reviewers[1].scope"),
        ("scope = 3\n", "reviewers[1].scope"),
        ("levels = 'medium'\n", "reviewers[1].levels"),
        ("levels = { fatal = 'critical' }\n", "reviewers[1].levels.fatal"),
        ("levels = { error = 'high' }\n", "reviewers[1].levels.error"),
        ("levels = { error = 1 }\n", "reviewers[1].levels.error"),
        ("levels = { 'a b' = 'minor' }\n", 'reviewers[1].levels."a b"'),
    ],
)
def test_bad_sarif_scope_and_levels_name_their_path(extra: str, path: str) -> None:
    """A bad scope or levels of a sarif reviewer is refused at its field path."""
    err = _refusal(_second(SARIF + extra))
    assert err.path == path
    assert err.fix


def test_scope_is_a_sarif_option_only() -> None:
    """scope on a command reviewer is refused as the sarif backend's setting."""
    err = _refusal(_second("id = 'x'\nbackend = 'command'\nprogram = 'x'\nscope = 'lines'\n"))
    assert err.path == "reviewers[1].scope" and "sarif" in err.fix
