"""The tools a model reviewer may be given: each one's name, description and arguments.

The roster reader checks a reviewer's ``tools`` against :data:`TOOL_NAMES`; the model
backends offer :data:`SPECS` to the provider; the dispatcher that answers the calls is
:mod:`reviewers.models.tools`. Pure data, so the roster never imports an adapter.

Source: docs/harvest.md §1 (record_finding), docs/evidence-and-asks.md §1 (run_script)
and §2 (ask_human).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from council.asks.component import PROPS_MAX_BYTES
from council.roster.script_limits import LANGUAGES

READ_MAX_LINES = 2000
"""Most lines one ``read_file`` call returns."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool as a model sees it: name, description, JSON Schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


_PATH = {"type": "string", "description": "A path relative to the repository root."}

SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "read_file",
        "Read a file of the repository at the reviewed commit. Lines are numbered; read a "
        f"range with start_line/end_line (1-based, inclusive; at most {READ_MAX_LINES} "
        "lines per call).",
        {
            "type": "object",
            "properties": {
                "path": _PATH,
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1},
            },
            "required": ["path"],
        },
    ),
    ToolSpec(
        "list_files",
        "List the files under a directory of the repository (recursive, sorted). Without "
        "dir, the whole repository.",
        {"type": "object", "properties": {"dir": _PATH}},
    ),
    ToolSpec(
        "grep",
        "Search the repository's text files for a regular expression (RE2 syntax: no "
        "backreferences nor lookaround). Replies with path:line: text for each matching "
        "line. path narrows the search to a file or a directory.",
        {
            "type": "object",
            "properties": {"pattern": {"type": "string"}, "path": _PATH},
            "required": ["pattern"],
        },
    ),
    ToolSpec(
        "record_finding",
        "Record ONE finding the moment you are sure of it, so it is kept even if you are "
        "stopped before you answer. Same shape as one entry of the findings array of "
        "your answer; still repeat it in your final answer.",
        {
            "type": "object",
            "properties": {
                "finding": {
                    "type": "object",
                    "description": "One finding: location, label, subject, discussion, "
                    "severity, confidence.",
                }
            },
            "required": ["finding"],
        },
    ),
    ToolSpec(
        "run_script",
        "Run a short script once, in a sandbox: the repository at the reviewed commit is "
        "its working directory (read-only), it has a private temporary directory, no "
        "network and limited CPU time, memory, processes and output. Replies with its exit "
        "status and output. To show a script as evidence in a finding, paste exactly the "
        "program you submitted here, byte for byte: the report says whether it ran.",
        {
            "type": "object",
            "properties": {
                "language": {"type": "string", "enum": list(LANGUAGES)},
                "program": {"type": "string", "description": "The script's full text."},
            },
            "required": ["language", "program"],
        },
    ),
    ToolSpec(
        "store_artifact",
        "Store a large JSON value (a list of 200 options, say) in this run's artifact "
        "store. Replies with its ref (art_...): pass it as props_ref of an ask_human "
        f"component whose props would be over {PROPS_MAX_BYTES} bytes inline.",
        {
            "type": "object",
            "properties": {"value": {"description": "Any JSON value; usually an object."}},
            "required": ["value"],
        },
    ),
    ToolSpec(
        "ask_human",
        "Ask the person behind this change a question you cannot answer from the code. "
        "The review pauses until they answer (that may take hours); their answer is this "
        "call's reply. Ask only what matters for a finding. component optionally names a "
        "registered screen component to collect the answer: {component_id, props?} or "
        '{component_id, props_ref?}; e.g. {"component_id": "choice", "props": {"options": '
        '["a", "b"]}}. A question that cannot be asked gets the reason as its reply.',
        {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question, in prose."},
                "component": {
                    "type": "object",
                    "description": "{component_id, props?, props_ref?}; nothing else.",
                },
            },
            "required": ["question"],
        },
    ),
)
"""Every tool a model reviewer may be given, in the order they are offered."""

TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in SPECS)
"""The names a roster's ``tools`` may list for a model reviewer."""


def specs_for(names: Sequence[str]) -> tuple[ToolSpec, ...]:
    """The specs of the named tools (unknown names are left out), in :data:`SPECS` order."""
    wanted = set(names)
    return tuple(spec for spec in SPECS if spec.name in wanted)
