"""The provider registry a worker owns, and what it refuses a roster (issue 24).

Parsing (:mod:`council.roster.providers`): each bad registry is one error naming the file,
the provider and the fix. Rules (:mod:`council.roster.provider_rules`): a distributed
worker runs a model reviewer only on its registry's endpoint and key variable, passes a
program only its allowlist and never a key; embedded mode honours the roster.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from council.model.participant import Participant
from council.roster import parse_roster
from council.roster.backend_options import KEYLESS_OPTION, key_env
from council.roster.provider_rules import ProviderRefused, for_worker
from council.roster.providers import (
    ProviderEntry,
    ProviderRegistry,
    RegistryError,
    default_registry,
    parse_registry,
)

ENV = {"OPENAI_API_KEY": "sk-o", "TEAM_KEY": "t", "AWS_SECRET_ACCESS_KEY": "aws"}

REGISTRY = """
[providers.openai]
base_url = "https://api.openai.com/v1"
key_env = "OPENAI_API_KEY"

[providers.team]
api = "openai"
base_url = "https://llm.internal/v1/"
key_env = "TEAM_KEY"
models = ["gpt-team"]

[providers.ollama]
api = "openai"
base_url = "http://localhost:11434/v1"

[programs]
env = ["SSL_CERT_FILE"]
"""


def _registry() -> ProviderRegistry:
    return parse_registry(REGISTRY, "/etc/council/providers.toml", ENV)


def _model(**options: Any) -> Participant:
    model = options.pop("model", "gpt-4.1")
    return Participant(id="hawk", role="reviewer", backend="openai", model=model, options=options)


def _program(env: list[str]) -> Participant:
    return Participant(
        id="lint", role="reviewer", backend="command", options={"program": "lint", "env": env}
    )


def test_a_registry_file_is_read_with_its_defaults_and_allowlist() -> None:
    """api defaults to the name when it is one; no key_env is a keyless provider; the
    [programs] env list is the allowlist."""
    registry = _registry()
    assert registry.providers["openai"].api == "openai"
    assert registry.providers["team"].models == ("gpt-team",)
    assert registry.providers["ollama"].key_env is None
    assert registry.program_env == ("SSL_CERT_FILE",)
    assert {"OPENAI_API_KEY", "TEAM_KEY", "ANTHROPIC_API_KEY"} <= registry.key_variables


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ('[providers.x\nbase_url = "h"', "line 1, column 13", "not valid TOML"),
        ("[providers.x]\napi = 'openai'\n", "providers.x.base_url", "is missing"),
        (
            "[providers.x]\napi = 'openai'\nbase_url = 'ftp://host'\n",
            "providers.x.base_url",
            "not an http(s) URL",
        ),
        (
            "[providers.x]\napi = 'openai'\nbase_url = 'http://h'\nkey_env = 'UNSET_KEY'\n",
            "providers.x.key_env",
            "UNSET_KEY is not set in this worker's environment",
        ),
        ("[providers.x]\nbase_url = 'http://h'\n", "providers.x.api", "is missing"),
        (
            "[providers.x]\napi = 'gemini'\nbase_url = 'http://h'\n",
            "providers.x.api",
            "'gemini' is not an API",
        ),
        (
            "[providers.x]\napi = 'openai'\nbase_url = 'http://h'\napi_key = 'sk'\n",
            "providers.x.api_key",
            "never goes in a file",
        ),
        ("[programs]\nenv = ['OPENAI_API_KEY']\n", "programs.env", "holds a model provider's key"),
        (
            "[providers.t]\napi = 'openai'\nbase_url = 'http://h'\nkey_env = 'TEAM_KEY'\n"
            "[programs]\nenv = ['TEAM_KEY']\n",
            "programs.env",
            "TEAM_KEY holds a model provider's key",
        ),
        ("[programs]\nenv = ['COUNCIL_REDIS_URL']\n", "programs.env", "set by council"),
        ("[keys]\n", "keys", "unknown table"),
    ],
)
def test_a_bad_registry_names_the_file_the_place_and_a_fix(
    text: str, where: str, words: str
) -> None:
    with pytest.raises(RegistryError) as caught:
        parse_registry(text, "/etc/council/providers.toml", ENV)
    message = str(caught.value)
    assert message.startswith(f"provider registry /etc/council/providers.toml: {where}:")
    assert words in message
    assert caught.value.fix


def test_the_defaults_come_from_the_standard_variables_and_a_keyless_local_url() -> None:
    """OPENAI_API_KEY set, ANTHROPIC_API_KEY not: openai only; the local URL is keyless."""
    registry = default_registry({"OPENAI_API_KEY": "sk"}, "http://localhost:11434/v1")
    assert sorted(registry.providers) == ["local", "openai"]
    assert registry.providers["openai"].base_url == "https://api.openai.com/v1"
    assert registry.providers["local"].key_env is None
    assert registry.program_env == ()
    with pytest.raises(RegistryError, match="COUNCIL_LOCAL_BASE_URL"):
        default_registry({}, "localhost:11434")


def test_a_distributed_worker_runs_a_model_on_its_registrys_endpoint_and_key() -> None:
    """A plain openai reviewer gets OpenAI's provider; a named one the registry's."""
    plain = for_worker(_model(), _registry(), embedded=False)
    assert plain.options["base_url"] == "https://api.openai.com/v1"
    assert key_env(plain) == "OPENAI_API_KEY"
    team = for_worker(_model(provider="team", model="gpt-team"), _registry(), embedded=False)
    assert team.options["base_url"] == "https://llm.internal/v1/"
    assert key_env(team) == "TEAM_KEY"


def test_a_roster_url_and_key_the_registry_holds_are_accepted() -> None:
    """Rosters written before the registry run where it holds what they name (a trailing
    slash or the host's case does not matter)."""
    asked = _model(base_url="https://LLM.internal/v1", api_key_env="TEAM_KEY", model="gpt-team")
    assert for_worker(asked, _registry(), embedded=False).options["provider"] == "team"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (
            {"base_url": "http://127.0.0.1:9999/v1", "api_key_env": "AWS_SECRET_ACCESS_KEY"},
            "holds no provider for the openai endpoint http://127.0.0.1:9999/v1 with the key "
            "in AWS_SECRET_ACCESS_KEY",
        ),
        ({"base_url": "http://127.0.0.1:9999/v1"}, "holds no provider for the openai endpoint"),
        ({"api_key_env": "AWS_SECRET_ACCESS_KEY"}, "with the key in AWS_SECRET_ACCESS_KEY"),
        ({"provider": "azure"}, "provider 'azure' is not in this worker's provider registry"),
        (
            {"provider": "openai", "base_url": "http://127.0.0.1:9999/v1"},
            "is not the endpoint of provider 'openai'",
        ),
        (
            {"provider": "openai", "api_key_env": "AWS_SECRET_ACCESS_KEY"},
            "is not the key variable of provider 'openai'",
        ),
        ({"provider": "team"}, "is not among the models provider 'team' allows"),
    ],
)
def test_a_distributed_worker_refuses_what_its_registry_does_not_hold(
    options: dict[str, Any], words: str
) -> None:
    with pytest.raises(ProviderRefused) as caught:
        for_worker(_model(**options), _registry(), embedded=False)
    message = str(caught.value)
    assert words in message
    assert message.startswith("reviewers[hawk]")
    assert "sk-o" not in message and "aws" not in message.replace("AWS_", "")


def test_an_anthropic_reviewer_cannot_use_an_openai_provider() -> None:
    judge = Participant(
        id="arbiter", role="judge", backend="anthropic", model="c", options={"provider": "team"}
    )
    with pytest.raises(ProviderRefused, match=r"judge\.provider: .*speaks the openai API"):
        for_worker(judge, _registry(), embedded=False)


def test_a_keyless_provider_reads_no_key_and_drops_a_smuggled_option() -> None:
    """ollama needs no key: the participant is keyless (no variable read), whatever
    options the submitter wrote; a keyed one loses a submitter's keyless flag."""
    local = for_worker(_model(provider="ollama", keyless=False), _registry(), embedded=False)
    assert local.options[KEYLESS_OPTION] is True and key_env(local) is None
    keyed = for_worker(_model(keyless=True), _registry(), embedded=False)
    assert KEYLESS_OPTION not in keyed.options and key_env(keyed) == "OPENAI_API_KEY"


def test_embedded_mode_honours_the_roster_and_resolves_named_providers() -> None:
    """The user's own machine: the roster's endpoint and key variable as written."""
    own = _model(base_url="http://127.0.0.1:9999/v1", api_key_env="MY_KEY")
    assert for_worker(own, _registry(), embedded=True) == own
    named = for_worker(_model(provider="ollama"), _registry(), embedded=True)
    assert named.options["base_url"] == "http://localhost:11434/v1"
    with pytest.raises(ProviderRefused, match="provider 'azure' is not in"):
        for_worker(_model(provider="azure"), _registry(), embedded=True)


def test_a_default_registry_says_which_variable_would_add_a_standard_provider() -> None:
    with pytest.raises(ProviderRefused, match="only when ANTHROPIC_API_KEY is set"):
        for_worker(_model(provider="anthropic"), default_registry({}, None), embedded=False)


def test_program_variables_are_the_workers_allowlist_and_never_a_key() -> None:
    registry = _registry()
    assert for_worker(_program(["SSL_CERT_FILE"]), registry, embedded=False)
    with pytest.raises(ProviderRefused, match="does not pass AWS_SECRET_ACCESS_KEY"):
        for_worker(_program(["AWS_SECRET_ACCESS_KEY"]), registry, embedded=False)
    assert for_worker(_program(["AWS_SECRET_ACCESS_KEY"]), registry, embedded=True)
    for mode in (True, False):
        with pytest.raises(ProviderRefused, match="TEAM_KEY holds a model provider's key"):
            for_worker(_program(["TEAM_KEY"]), registry, embedded=mode)


def test_the_roster_reads_a_provider_name_and_refuses_a_bad_one() -> None:
    roster = parse_roster(
        '[[reviewers]]\nid = "hawk"\nbackend = "openai"\nmodel = "m"\nprovider = "ollama"\n',
        "council.toml",
    )
    assert roster.reviewers[0].options["provider"] == "ollama"
    with pytest.raises(Exception, match=r"reviewers\[0\]\.provider: '\.\./x' is not"):
        parse_roster(
            '[[reviewers]]\nid = "h"\nbackend = "openai"\nmodel = "m"\nprovider = "../x"\n',
            "council.toml",
        )
    with pytest.raises(Exception, match=r"reviewers\[0\]\.keyless: unknown key"):
        parse_roster(
            '[[reviewers]]\nid = "h"\nbackend = "openai"\nmodel = "m"\nkeyless = true\n',
            "council.toml",
        )


URLS = st.sampled_from(
    [
        None,
        "https://api.openai.com/v1",
        "https://llm.internal/v1",
        "http://localhost:11434/v1",
        "http://127.0.0.1:9999/v1",
        "https://evil.example/v1",
    ]
)
VARIABLES = st.sampled_from(
    [None, "OPENAI_API_KEY", "TEAM_KEY", "AWS_SECRET_ACCESS_KEY", "HOME", "MY_KEY"]
)
PROVIDERS = st.sampled_from([None, "openai", "team", "ollama", "azure"])


@given(url=URLS, variable=VARIABLES, provider=PROVIDERS, model=st.sampled_from(["gpt-team", "m"]))
def test_a_distributed_worker_only_ever_sends_a_registry_key_to_its_endpoint(
    url: str | None, variable: str | None, provider: str | None, model: str
) -> None:
    """Whatever a roster asks, a distributed worker either refuses it or runs it with one
    provider's (endpoint, key variable) pair, exactly as the registry holds it."""
    options = {
        k: v
        for k, v in {"base_url": url, "api_key_env": variable, "provider": provider}.items()
        if v is not None
    }
    registry = _registry()
    pairs = {(p.base_url, p.key_env) for p in registry.providers.values()}
    try:
        run = for_worker(_model(model=model, **options), registry, embedded=False)
    except ProviderRefused:
        return
    assert (run.options["base_url"], key_env(run)) in pairs
    entry: ProviderEntry = registry.providers[run.options["provider"]]
    assert not entry.models or model in entry.models


@given(
    names=st.lists(
        st.sampled_from(
            ["SSL_CERT_FILE", "AWS_SECRET_ACCESS_KEY", "TEAM_KEY", "OPENAI_API_KEY", "LANG_EXTRA"]
        ),
        max_size=4,
    ),
    embedded=st.booleans(),
)
def test_a_program_is_never_passed_a_key_variable(names: list[str], embedded: bool) -> None:
    """Whatever a roster lists, a program accepted by a worker names no key variable, and
    (distributed) only the worker's allowlist."""
    registry = _registry()
    try:
        for_worker(_program(names), registry, embedded=embedded)
    except ProviderRefused:
        return
    assert not set(names) & registry.key_variables
    if not embedded:
        assert set(names) <= set(registry.program_env)


def test_a_keyless_participant_sends_the_placeholder_never_a_key_it_was_given() -> None:
    """A keyless provider's review is answered with no variable set, and the request
    carries the placeholder, not a key the worker happens to hold."""
    from reviewers.models.conversation import KEYLESS_KEY
    from reviewers.models.openai_chat import OpenAIReviewer
    from tests.fakes import FakeOpenAI, Scenario
    from tests.fakes.review import BACKENDS as MODEL_BACKENDS
    from tests.fakes.review import MemorySink, participant, request

    with FakeOpenAI(api_key=KEYLESS_KEY) as server:
        server.script(Scenario(text='{"findings": []}'))
        who = participant(MODEL_BACKENDS[0], server)
        options = {k: v for k, v in who.options.items() if k != "api_key_env"}
        who = who.model_copy(update={"options": {**options, KEYLESS_OPTION: True}})
        result = OpenAIReviewer().review(
            request(who, sink=MemorySink(), secrets={"OPENAI_API_KEY": "sk-not-for-you"})
        )
        assert result.failure is None
        assert [r.credential_ok for r in server.requests] == [True]


def test_the_worker_loads_its_file_or_says_which_and_why(tmp_path: Any) -> None:
    """COUNCIL_PROVIDERS names the file; a missing file, or COUNCIL_LOCAL_BASE_URL beside
    one, is refused naming the file."""
    from workers.app.providers import load_providers
    from workers.app.settings import Settings

    path = tmp_path / "providers.toml"
    path.write_text(REGISTRY)
    assert sorted(load_providers(Settings(providers=path), ENV).providers) == [
        "ollama",
        "openai",
        "team",
    ]
    with pytest.raises(RegistryError, match=rf"{tmp_path}/gone.toml: cannot be read"):
        load_providers(Settings(providers=tmp_path / "gone.toml"), ENV)
    beside = Settings(providers=path, local_base_url="http://localhost:11434/v1")
    with pytest.raises(RegistryError, match="COUNCIL_LOCAL_BASE_URL is set beside"):
        load_providers(beside, ENV)
    assert sorted(load_providers(Settings(), {"ANTHROPIC_API_KEY": "a"}).providers) == ["anthropic"]


def test_a_worker_with_a_bad_registry_does_not_start_and_names_the_file(tmp_path: Any) -> None:
    """``council worker --providers FILE`` whose key variable is unset: exit 2 and one
    ``worker_failed`` line naming the file, the provider and the fix, before Redis is
    even reached (none listens at the URL)."""
    import os
    import subprocess
    import sys

    from tests.services import ROOT, free_port

    path = tmp_path / "providers.toml"
    path.write_text('[providers.team]\napi = "openai"\nbase_url = "https://h/v1"\nkey_env = "T"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_") and k != "T"}
    env["COUNCIL_REDIS_URL"] = f"redis://127.0.0.1:{free_port()}/0"
    done = subprocess.run(
        [sys.executable, "-m", "workers.cli", "worker", "--providers", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    (line,) = [json.loads(text) for text in (done.stdout + done.stderr).splitlines() if text]
    assert line["event"] == "worker_failed"
    assert f"provider registry {path}: providers.team.key_env: T is not set" in line["message"]
    assert "Export T for the worker" in line["message"]


def test_on_a_laptop_one_variable_adds_a_keyless_local_model(tmp_path: Any) -> None:
    """Embedded mode: ``COUNCIL_LOCAL_BASE_URL`` and ``provider = "local"`` review with no
    key variable at all (none set, none dummy); an unknown provider is refused before
    anything is sent (exit 2), naming it and the fix."""
    from reviewers.models.conversation import KEYLESS_KEY
    from tests.fakes import FakeOpenAI, Scenario
    from tests.gitrepo import commit, new_repo
    from tests.unit.test_cli_review import review, reviewer, roster, states

    path = new_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    commit(path, {"app.py": "x = 1\ny = 1 / 0\n"}, "divide")
    with FakeOpenAI(api_key=KEYLESS_KEY) as server:
        server.script(Scenario(text='{"findings": []}'))
        local = roster(tmp_path, reviewer("llama", "openai", model="llama3", provider="local"))
        out = tmp_path / "r.json"
        env = {"COUNCIL_LOCAL_BASE_URL": server.base_url, "OPENAI_API_KEY": ""}
        done = review(path, tmp_path / "s.json", "--json", str(out), roster_path=local, env=env)
        assert done.exit_code == 0, done.output
        assert states(json.loads(out.read_text())) == {"llama": "answered"}
        assert [r.credential_ok for r in server.requests] == [True]
    unknown = roster(tmp_path, reviewer("hawk", "openai", model="m", provider="azure"))
    done = review(path, tmp_path / "s.json", roster_path=unknown, env=env)
    assert done.exit_code == 2
    assert "reviewers[hawk].provider: provider 'azure' is not in" in done.output
    assert "An operator adds it" in done.output
