"""Sentinel URLs: read into sentinels, a master's name, a database and a login; handed to
kombu and Celery in their form; refused, naming what is wrong and never the password."""

from __future__ import annotations

import re
import threading

import pytest
from click.testing import CliRunner
from pydantic import SecretStr

from council.errors import ConfigurationError, StoreUnavailable
from workers.app.celery_config import celery_config
from workers.app.redis_urls import (
    SentinelUrl,
    _drop_connections,
    follow_switches,
    parse_sentinel,
    redis_client,
)
from workers.app.services import connect
from workers.app.settings import Settings
from workers.cli import main

URL = "sentinel://:p%40ss@h1:26379;sentinel://h2/3?master_name=mymaster"


def test_a_sentinel_url_is_read() -> None:
    assert parse_sentinel(URL) == SentinelUrl(
        sentinels=(("h1", 26379), ("h2", 26379)),
        master_name="mymaster",
        db=3,
        password="p@ss",
    )


def test_kombu_reads_every_sentinel_with_the_login_and_database() -> None:
    assert parse_sentinel(URL).kombu_url() == (
        "sentinel://:p%40ss@h1:26379/3;sentinel://:p%40ss@h2:26379/3"
    )


def test_celery_gets_the_sentinels_and_the_master_name() -> None:
    conf = celery_config(Settings(redis_url=SecretStr(URL)))
    assert conf["broker_url"] == conf["result_backend"] == parse_sentinel(URL).kombu_url()
    assert conf["broker_transport_options"]["master_name"] == "mymaster"
    assert conf["result_backend_transport_options"]["master_name"] == "mymaster"


def test_a_plain_url_is_left_as_it_is() -> None:
    conf = celery_config(Settings(redis_url=SecretStr("redis://h:6379/0")))
    assert conf["broker_url"] == "redis://h:6379/0"
    assert "master_name" not in conf["broker_transport_options"]


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("sentinel://h1:26379/0", "needs one master_name"),
        ("sentinel://h1?master_name=a;sentinel://h2?master_name=b", "2 different master_name"),
        ("sentinel://h1/0?master_name=a;redis://h2", "not starting with sentinel://"),
        ("sentinel://h1/x?master_name=a", "names database 'x'"),
        ("sentinel://h1/1;sentinel://h2/2?master_name=a", "2 different databases"),
        ("sentinel://h1?master_name=a&password=zz9", "unknown option(s) password"),
        ("sentinel://:a@h1;sentinel://:b@h2?master_name=m", "different users or passwords"),
        ("sentinel://h1:notaport?master_name=a", "cannot be read"),
    ],
)
def test_a_wrong_sentinel_url_is_refused_saying_why(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)) as caught:
        parse_sentinel(url)
    assert "zz9" not in str(caught.value)


def test_the_cli_refuses_a_sentinel_url_without_master_name_exit_2(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COUNCIL_REDIS_URL", "sentinel://:hunter2@127.0.0.1:1/0")
    result = CliRunner().invoke(main, ["runs"])
    assert result.exit_code == 2, result.output
    assert "COUNCIL_REDIS_URL: this Sentinel URL needs one master_name" in result.output
    assert "hunter2" not in result.output


def test_no_sentinel_answering_is_unavailable_without_the_password() -> None:
    with pytest.raises(StoreUnavailable) as caught:
        connect("sentinel://:hunter2@127.0.0.1:1/0?master_name=m")
    text = str(caught.value)
    assert "hunter2" not in text and "sentinel://:***@127.0.0.1:1/0" in text


def test_connect_names_a_wrong_sentinel_url_without_the_password() -> None:
    with pytest.raises(ConfigurationError) as caught:
        connect("sentinel://:hunter2@127.0.0.1:1/0")
    assert "needs one master_name" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_sentinel_client_asks_for_the_master_by_name() -> None:
    client = redis_client(URL, socket_timeout=30.0, socket_connect_timeout=5.0)
    pool = client.connection_pool
    assert pool.service_name == "mymaster"
    assert pool.connection_kwargs["db"] == 3 and pool.connection_kwargs["password"] == "p@ss"
    assert pool.connection_kwargs["socket_timeout"] == 30.0
    # The sentinels themselves are asked with short timeouts.
    (first, _) = pool.sentinel_manager.sentinels
    assert first.connection_pool.connection_kwargs["socket_timeout"] == 5.0


def test_a_switch_drops_idle_connections_and_marks_those_in_use() -> None:
    """On ``+switch-master`` the idle connections close at once; one in use is only
    marked (closing it mid-command from another thread breaks its reader) and closes
    when given back."""
    client = redis_client(URL, socket_timeout=30.0)
    pool = client.connection_pool
    idle, busy = pool.make_connection(), pool.make_connection()
    pool._available_connections.append(idle)
    pool._in_use_connections.add(busy)
    closed: list[object] = []
    idle.disconnect = lambda *a, **k: closed.append(idle)  # type: ignore[method-assign]
    busy.disconnect = lambda *a, **k: closed.append(busy)  # type: ignore[method-assign]
    _drop_connections(pool)
    assert closed == [idle] and busy.should_reconnect()
    pool.release(busy)
    assert closed == [idle, busy]


def test_a_plain_client_follows_no_sentinel() -> None:
    before = {t.name for t in threading.enumerate()}
    follow_switches(redis_client("redis://127.0.0.1:1/0"))
    assert "council-sentinel" not in {t.name for t in threading.enumerate()} - before


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis://:SEK RIT@127.0.0.1:1/0", "holds a space, tab or line break"),
        ("redis://user:zz9\tzz9@127.0.0.1:1/0", "holds a space, tab or line break"),
        ("redis://:SEKRIT@127.0.0.1:1/abc", "names database 'abc': write a number"),
        ("rediss://:SEKRIT@127.0.0.1:1/1x?ssl_cert_reqs=none", "names database '1x'"),
        ("redis://:SEKRIT@localhost:99999/0", "names a port that is not a number from 1"),
        ("redis://:SEKRIT@localhost:0", "names a port that is not a number from 1"),
        ("redis://localhost:abc/0", "names a port that is not a number from 1"),
        # A '?' left in the password cuts the URL there: the port read is the password's.
        ("redis://:SEK?RIT@localhost:6379/0", "percent-encode ':' '/' '?' '#' '@'"),
    ],
)
def test_a_plain_url_a_client_would_misread_is_refused_exit_2(
    url: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A password with a space would be printed in clear by every message that names the
    URL, and a database that is not a number made the worker crash with exit 0 (and the
    CLI use database 0), and a port out of range was blamed on the password: each is
    refused at start, naming what to fix, never the password."""
    monkeypatch.setenv("COUNCIL_REDIS_URL", url)
    result = CliRunner().invoke(main, ["runs"])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert "SEK" not in result.output and "zz9" not in result.output


@pytest.mark.parametrize("value", ["AOF", " replicas:2 ", "aof+Replicas:1", ""])
def test_durability_is_read_in_any_case(value: str) -> None:
    assert Settings(durability=value).durability == value.strip().lower()


@pytest.mark.parametrize("value", ["replicas:", "replicas:0", "replicas:-1", "aof+", "fsync"])
def test_a_bad_durability_names_the_value_and_the_choices(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COUNCIL_DURABILITY", value)
    result = CliRunner().invoke(main, ["runs"])
    assert result.exit_code == 2, result.output
    assert f"COUNCIL_DURABILITY: {value!r} is not one of: aof, replicas:N" in result.output


@pytest.mark.parametrize(
    "url",
    [
        "redis://localhost:6379/0",
        "redis://:p%3Fw@localhost:6379/0",
        "redis://[::1]:6379/0",
        "redis://[::1]/0",
        "redis://localhost",
        "rediss://u:p@host:65535/2?ssl_cert_reqs=none",
        "unix:///run/redis.sock?db=1",
    ],
)
def test_a_url_with_a_good_port_or_none_is_taken(url: str) -> None:
    assert Settings(redis_url=url).redis_url_value() == url
