"""The embedded state file's shape, checked when it is read: a file (a CI cache may carry
one from anywhere) that is too big, too deep or holds a field of the wrong type or out of
range is refused with the field named, before anything of it reaches the store.

:func:`read_document` reads at most :data:`MAX_STATE_BYTES` and :data:`MAX_DEPTH` levels;
:func:`check_sessions` checks every session's fields (types, integers that are not
booleans, times and counters in range, flat maps of strings); :func:`check_contents` the
JSON each loaded session's strings hold (findings, dismissals, runs waiting on a person,
answers, the ledger), as the stores will read them. Each raises :class:`BadState`.
Source: docs/architecture.md "Embedded state".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from council.asks.pending import Answer
from council.model.findings import FINDING, FINDINGS
from council.session.ledger import Ledger

MAX_STATE_BYTES = 256 * 1024 * 1024
"""The most of a state file council reads (256 MiB): its sessions, and the runs waiting on
a person with their trees (each capped by ``max_tree_bytes``, 50 MiB by default)."""

MAX_DEPTH = 64
"""The deepest nesting of objects and lists a state file may hold (a valid one: under 10)."""

MAX_MS = 253_402_300_799_999
"""The latest time a state file may name (ms since the epoch: the end of year 9999)."""

MAX_ISSUED = 2**53
"""The highest id counter a session may hold."""

_MAPS = ("findings", "fingerprints", "reviewed", "dismissed", "waiting", "answers", "acted")
_REQUIRED = ("issued", "ledger", "findings", "attributed")


class BadState(ValueError):
    """What is wrong in a state file: ``where`` (the field), ``what`` (why)."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where} {what}")
        self.where = where
        self.what = what


def read_document(path: Path) -> Any:
    """The JSON value the file at ``path`` holds, read within :data:`MAX_STATE_BYTES` and
    :data:`MAX_DEPTH`. Raises :class:`BadState`, or OSError when it cannot be read."""
    with path.open("rb") as handle:
        raw = handle.read(MAX_STATE_BYTES + 1)
    if len(raw) > MAX_STATE_BYTES:
        raise BadState("the file", f"is over the {MAX_STATE_BYTES:,} bytes council reads")
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise BadState("the file", f"nests deeper than the {MAX_DEPTH} levels allowed") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadState("the file", f"is not JSON ({exc})") from None
    _check_depth(data)
    return data


def _check_depth(data: Any) -> None:
    """Raise :class:`BadState` when ``data`` nests deeper than :data:`MAX_DEPTH`; walks it
    without recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadState("the file", f"nests deeper than the {MAX_DEPTH} levels allowed")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def check_sessions(sessions: Mapping[str, Any]) -> None:
    """Check every session's fields (see the module's docstring)."""
    for name, saved in sessions.items():
        where = f"sessions[{json.dumps(name)}]"
        if not isinstance(saved, dict):
            raise BadState(where, "is not an object")
        for field in _REQUIRED:
            if field not in saved:
                raise BadState(f"{where}.{field}", "is missing")
        _time(f"{where}.expires_ms", saved.get("expires_ms"))
        _integer(f"{where}.issued", saved["issued"], MAX_ISSUED)
        for field in ("ledger", "recall"):
            if not isinstance(saved.get(field, ""), str):
                raise BadState(f"{where}.{field}", "is not a string")
        attributed = saved["attributed"]
        if not isinstance(attributed, list) or not all(isinstance(a, str) for a in attributed):
            raise BadState(f"{where}.attributed", "is not a list of strings")
        for field in _MAPS:
            _strings(f"{where}.{field}", saved.get(field, {}))
        runs = saved.get("runs") or {}
        if not isinstance(runs, dict):
            raise BadState(f"{where}.runs", "is not an object")
        for run_id, run in runs.items():
            _run(f"{where}.runs[{json.dumps(run_id)}]", str(run_id), run)


def check_contents(name: str, saved: Mapping[str, Any]) -> None:
    """Check the JSON the session ``name``'s strings hold, as the stores read it (its
    fields already passed :func:`check_sessions`)."""
    # here, not at the top: the session stores import the state file's module (records)
    from workers.stores.session_memory import Dismissal
    from workers.stores.sessions import Waiting

    where = f"sessions[{json.dumps(name)}]"
    field = where
    readers: dict[str, Any] = {
        "findings": FINDING.validate_json,
        "dismissed": Dismissal.model_validate_json,
        "waiting": Waiting.model_validate_json,
        "answers": Answer.model_validate_json,
    }
    try:
        if saved["ledger"]:
            field = f"{where}.ledger"
            Ledger.from_json(saved["ledger"])
        if saved.get("recall"):
            field = f"{where}.recall"
            FINDINGS.validate_json(saved["recall"])
        for key, read in readers.items():
            for entry, text in (saved.get(key) or {}).items():
                field = f"{where}.{key}[{json.dumps(entry)}]"
                read(text)
        reviewed = saved.get("reviewed") or {}
        field = f"{where}.reviewed"
        if reviewed.get("open"):
            FINDINGS.validate_json(reviewed["open"])
        if reviewed.get("reviewers"):
            json.loads(reviewed["reviewers"])
        int(reviewed.get("settled_ms", 0))
    except (ValidationError, ValueError, TypeError, KeyError) as exc:
        raise BadState(field, f"cannot be read ({_first_line(exc)})") from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(text[:3])[:300] if text else type(exc).__name__


def _integer(where: str, value: Any, highest: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadState(where, f"is {json.dumps(value)[:40]}, not an integer")
    if not 0 <= value <= highest:
        raise BadState(where, f"is {value}, outside 0 .. {highest}")


def _time(where: str, value: Any) -> None:
    if value is not None:
        _integer(where, value, MAX_MS)


def _strings(where: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise BadState(where, "is not an object")
    for key, item in value.items():
        if not isinstance(item, str):
            raise BadState(f"{where}[{json.dumps(key)}]", "is not a string")


def _run(where: str, run_id: str, run: Any) -> None:
    if not isinstance(run, dict) or not isinstance(run.get("keys"), dict):
        raise BadState(where, "is not an object with its keys")
    _time(f"{where}.expires_ms", run.get("expires_ms"))
    for name, item in run["keys"].items():
        at = f"{where}.keys[{json.dumps(name)}]"
        if name != f"run:{run_id}" and not name.startswith(f"run:{run_id}:"):
            raise BadState(at, f"is not a key of run {json.dumps(run_id)}")
        kind = item.get("type") if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if kind == "string" and isinstance(value, str):
            continue
        if kind == "list" and isinstance(value, list) and all(isinstance(v, str) for v in value):
            continue
        if kind == "hash":
            _strings(f"{at}.value", value)
            continue
        raise BadState(at, "is not a string, hash or list of base64 text")
