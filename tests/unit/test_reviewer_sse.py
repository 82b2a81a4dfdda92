"""The model backends' SSE reader: line endings, chunk boundaries, comments, cut streams."""

from __future__ import annotations

import json
import time

import pytest

from reviewers.models.sse import ServerEvent, iter_events

OPENAI_LIKE = (
    b'data: {"choices":[{"index":0,"delta":{"content":"h\xc3\xa9"}}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":3}}\n\n'
    b"data: [DONE]\n\n"
)
ANTHROPIC_LIKE = (
    b'event: message_start\ndata: {"type":"message_start"}\n\n'
    b"event: ping\ndata: {}\n\n"
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


def events(*chunks: bytes) -> list[ServerEvent]:
    """The events of a body arriving in these chunks."""
    return list(iter_events(chunks))


def every_split(body: bytes) -> list[list[ServerEvent]]:
    """The events of ``body`` split into two chunks at every offset, and byte by byte."""
    results = [events(body[:cut], body[cut:]) for cut in range(len(body) + 1)]
    results.append(events(*(body[i : i + 1] for i in range(len(body)))))
    return results


def test_data_events_and_the_done_marker() -> None:
    """Each data line is one event (UTF-8 decoded); [DONE] is an event like any other."""
    got = events(OPENAI_LIKE)
    assert [e.event for e in got] == ["", "", ""]
    assert json.loads(got[0].data)["choices"][0]["delta"]["content"] == "hé"
    assert got[2] == ServerEvent("", "[DONE]")


def test_event_names() -> None:
    """An event: line names the event it belongs to, and only that one."""
    got = events(ANTHROPIC_LIKE + b"data: unnamed\n\n")
    assert [e.event for e in got] == ["message_start", "ping", "message_stop", ""]
    assert got[1].data == "{}"


@pytest.mark.parametrize("body", [OPENAI_LIKE, ANTHROPIC_LIKE])
def test_lines_split_across_chunk_boundaries(body: bytes) -> None:
    """Wherever the chunks split the body (inside a line, a CRLF, a UTF-8 character), the
    events are the same."""
    whole = events(body)
    assert all(split == whole for split in every_split(body))


@pytest.mark.parametrize("newline", [b"\r\n", b"\r", b"\n"])
def test_crlf_cr_and_lf_line_endings(newline: bytes) -> None:
    """CRLF, a lone CR and LF all end a line; a CRLF split between chunks is one ending."""
    body = ANTHROPIC_LIKE.replace(b"\n", newline)
    expected = events(ANTHROPIC_LIKE)
    assert events(body) == expected
    assert all(split == expected for split in every_split(body))


def test_a_lone_cr_then_lf_in_the_next_line_is_not_a_blank_line() -> None:
    """CR ending one chunk and LF opening the next are one line ending, not two."""
    assert events(b"data: a\r", b"\ndata: b\r", b"\n\r\n") == [ServerEvent("", "a\nb")]


def test_comments_and_unknown_fields_are_ignored() -> None:
    """Lines starting with a colon, id, retry and unknown fields leave the events alone."""
    body = b": keep-alive\n:\nid: 7\nretry: 100\nfoo: bar\ndata: x\n\n: bye\n\n"
    assert events(body) == [ServerEvent("", "x")]


def test_multi_line_data_is_joined_with_newlines() -> None:
    """Several data lines of one event are joined by LF; one space after the colon goes."""
    body = b'data: {"a":\ndata:  1,\ndata:"b": 2}\n\n'
    (event,) = events(body)
    assert event.data == '{"a":\n 1,\n"b": 2}'
    assert json.loads(event.data) == {"a": 1, "b": 2}


def test_field_without_colon_and_empty_data() -> None:
    """'data' alone is an empty data line: the event is dispatched with empty data."""
    assert events(b"data\n\n", b"data:\n\n") == [ServerEvent("", ""), ServerEvent("", "")]


def test_blank_lines_without_data_dispatch_nothing_and_reset_the_name() -> None:
    """An event: line without data is dropped at the blank line, its name with it."""
    assert events(b"event: ping\n\n\n\ndata: x\n\n") == [ServerEvent("", "x")]


def test_a_stream_cut_mid_event_drops_the_unfinished_event() -> None:
    """An event not closed by a blank line when the body ends is not dispatched."""
    assert events(b"data: one\n\n", b"data: two\n") == [ServerEvent("", "one")]
    assert events(b"data: one\n\n", b'data: {"cut') == [ServerEvent("", "one")]
    assert events(b"event: message_stop\n") == []
    assert events() == []


def test_a_byte_order_mark_is_skipped_and_bad_bytes_are_replaced() -> None:
    """A leading BOM (even split over chunks) is not part of the first field's name."""
    assert events(b"\xef\xbb", b"\xbfdata: x\n\n") == [ServerEvent("", "x")]
    assert events(b"data: \xff\n\n") == [ServerEvent("", "\ufffd")]


def test_long_lines_in_small_chunks_are_read_in_linear_time() -> None:
    """A 4 MB data line arriving in 64-byte chunks is joined once, not once per chunk."""
    payload = b"x" * (4 * 1024 * 1024)
    body = b"data: " + payload + b"\n\n"
    chunks = [body[i : i + 64] for i in range(0, len(body), 64)]
    started = time.monotonic()
    (event,) = events(*chunks)
    assert len(event.data) == len(payload)
    assert time.monotonic() - started < 2.0
