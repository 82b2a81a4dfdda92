"""The tools an agentic model reviewer may call, and the dispatcher that answers them.

The tools and their arguments: :mod:`council.roster.tool_catalog`. The file tools read the
pinned tree (``request.workdir``: the head commit unpacked from ``git archive``, never a
working directory); ``run_script`` runs in a sandbox of its own
(:mod:`reviewers.sandbox.scripts`) and records a row (docs/evidence-and-asks.md §1);
``store_artifact`` and ``ask_human`` are docs/evidence-and-asks.md §2's. The tree is
untrusted input: a path may not leave it (by ``..`` or a symlink), replies are bounded and
say where they were cut, and ``grep`` compiles with RE2 (linear: ``(a+)+$`` cannot freeze
the worker, as backtracking ``re`` would while holding the GIL). A tool never raises into
the model's loop: an error is the tool's reply. A file name that is not UTF-8 is shown, and
taken back, as the diff spells it (:mod:`reviewers.models.tree_spelling`); no reply holds
a lone surrogate.

Source: docs/harvest.md §1 (record_finding and its replies), docs/architecture.md (tree archive),
issue "The change under review is untrusted", docs/evidence-and-asks.md §1 (run_script
and its rows).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import re2

from council.asks.ask import Ask, checked_ask
from council.asks.component import PROPS_MAX_BYTES
from council.errors import AskRefused
from council.harvest.record_call import reply, split_recorded
from council.roster.script_limits import ScriptLimits
from council.roster.tool_catalog import READ_MAX_LINES, specs_for
from reviewers.base import (
    ArtifactDesk,
    EventLog,
    JournalSink,
    ScriptSink,
    ignore_events,
    ignore_scripts,
)
from reviewers.models.tree_spelling import REPLACEMENT, shown, spelled_in
from reviewers.sandbox.scripts import (
    ScriptRun,
    ScriptRunner,
    check_submission,
    reply_text,
)

OUTPUT_MAX_CHARS = 60_000
"""Most characters of one tool reply (about 15,000 tokens)."""

LIST_MAX_FILES = 1000
"""Most paths one ``list_files`` call returns."""

GREP_MAX_MATCHES = 200
"""Most matching lines one ``grep`` call returns."""

READ_MAX_BYTES = 1024 * 1024
"""Most bytes of one file ``read_file`` reads (1 MiB) unless the worker's
``COUNCIL_TOOL_READ_MAX_BYTES`` says otherwise; past it the reply says where the file was
cut."""

LINE_MAX_CHARS = 4000
"""A line ``read_file`` shows is cut after this many characters, saying so (a minified
file is one long line)."""

BINARY_SNIFF_BYTES = 8000
"""A file holding a NUL byte in its first 8000 bytes is binary (git's own test)."""

GREP_MAX_FILE_BYTES = 2 * 1024 * 1024
"""Files larger than this (bytes) are skipped by ``grep``; the reply counts them."""

GREP_LINE_CHARS = 400
"""A matching line is quoted up to this many characters."""

GREP_BUDGET_MS = 10_000
"""Time one ``grep`` call may take, in milliseconds, whatever the files; past it the
search stops (checked between lines), saying so."""

GREP_MAX_MEM_BYTES = 8 * 1024 * 1024
"""Memory RE2 may use to compile one ``grep`` pattern (8 MiB, RE2's default)."""

PATTERN_MAX_CHARS = 500
"""Longest ``grep`` pattern accepted."""

NO_TREE = (
    "No source tree is available to this review, so files cannot be read, listed or "
    "searched; review the diff in the prompt."
)
"""The reply of a file tool when the review has no pinned tree (``workdir`` is None)."""


class ToolBox:
    """Answers a model's tool calls over one review's tree and journal.

    ``workdir`` None: the file tools reply :data:`NO_TREE`. ``on_entry`` is called for every
    entry the journal accepted (the idle clock's activity); :attr:`entries` counts them.
    ``runner`` None: a :class:`~reviewers.sandbox.scripts.ScriptRunner` over ``workdir`` with
    ``limits`` and ``bwrap``, made on the first script (most reviews run none; making one
    resolves the tree and copies the environment). :attr:`dispatched` counts the calls so
    far (a ``run_script`` row's ``dispatch``). ``artifacts`` None: no store, so a
    ``props_ref`` is refused. :attr:`asked` is the first accepted ask with its call id (the
    caller pauses on it);
    ``ask_refusal``, when given, is why ``ask_human`` may not ask at all (the reviewer asked
    the most it may in this run).
    """

    def __init__(
        self,
        names: Sequence[str],
        workdir: Path | None,
        journal: JournalSink,
        on_entry: Callable[[], None] = lambda: None,
        events: EventLog = ignore_events,
        *,
        read_max_bytes: int = READ_MAX_BYTES,
        scripts: ScriptSink = ignore_scripts,
        limits: ScriptLimits | None = None,
        bwrap: str = "bwrap",
        runner: ScriptRunner | None = None,
        artifacts: ArtifactDesk | None = None,
        ask_refusal: str | None = None,
    ) -> None:
        self.events = events
        self.artifacts = artifacts
        self.ask_refusal = ask_refusal
        self.asked: tuple[str, Ask] | None = None
        self.read_max_bytes = read_max_bytes
        self.names = tuple(spec.name for spec in specs_for(names))
        self.root = workdir.resolve() if workdir is not None else None
        self.journal = journal
        self.on_entry = on_entry
        self.entries = 0
        self.dispatched = 0
        self.scripts = scripts
        self.limits = limits or ScriptLimits()
        self._runner, self._bwrap = runner, bwrap

    @property
    def runner(self) -> ScriptRunner:
        """The script runner (made on first use when none was given)."""
        if self._runner is None:
            self._runner = ScriptRunner(self.root, self.limits, self._bwrap)
        return self._runner

    def call(self, name: str, arguments: str | Mapping[str, Any], call_id: str = "") -> str:
        """Run one tool call; the reply text (an error is a reply too). Never raises.

        ``call_id`` is the model's id of the call (a ``run_script`` row's
        ``tool_call_id``; when empty, ``call-{dispatch}``). Every call is reported to
        ``events`` as ``tool_call`` with its duration in ms.
        """
        started = time.monotonic()
        self.dispatched += 1
        reply = shown(self._call(name, arguments, call_id or f"call-{self.dispatched}"))
        self.events(
            "tool_call",
            tool=name,
            duration_ms=int((time.monotonic() - started) * 1000),
            reply_chars=len(reply),
        )
        return reply

    def _call(self, name: str, arguments: str | Mapping[str, Any], call_id: str) -> str:
        if name not in self.names:
            offered = ", ".join(self.names) or "none"
            return f"There is no tool named {name!r} in this review; the tools are: {offered}."
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments) if arguments.strip() else {}
            except ValueError as error:
                if name == "run_script":
                    self._row(call_id, None, ScriptRun(outcome="not-run", reason="bad JSON"))
                return f"The arguments of {name} were not valid JSON ({error}); call it again."
        else:
            parsed = dict(arguments)
        if not isinstance(parsed, dict):
            if name == "run_script":
                self._row(call_id, None, ScriptRun(outcome="not-run", reason="not an object"))
            return f"The arguments of {name} must be a JSON object; call it again."
        try:
            if name == "run_script":
                return self._run_script(parsed, call_id)
            if name == "record_finding":
                return self._record(parsed)
            if name == "ask_human":
                return self._ask_human(parsed, call_id)
            if name == "store_artifact":
                return self._store_artifact(parsed)
            if self.root is None:
                return NO_TREE
            tree = _Tree(self.root, self.read_max_bytes)
            if name == "read_file":
                return tree.read_file(parsed)
            if name == "list_files":
                return tree.list_files(parsed)
            return tree.grep(parsed)
        except Exception as error:  # a tool never raises into the model's loop
            return f"The {name} tool failed ({type(error).__name__}: {error})."

    # -- scripts -------------------------------------------------------------------------

    def _run_script(self, args: Mapping[str, Any], call_id: str) -> str:
        """Run the submitted script (or refuse it), record the call's ONE row, reply."""
        submitted = check_submission(args)
        program = args.get("program")
        text = program if isinstance(program, str) and "\0" not in program else None
        if isinstance(submitted, str):
            run = ScriptRun(outcome="not-run", reason=submitted)
            self._row(call_id, text, run)
            return f"The script was not run: {submitted} Call run_script again."
        language, program = submitted
        run = self.runner.run(language, program)
        self.events(
            "script_run",
            outcome=run.outcome,
            exit_code=run.exit_code,
            limit=run.limit,
            duration_ms=run.duration_ms,
        )
        answer = reply_text(run, self.limits)
        stored = self._row(call_id, program, run)
        if stored is not None:
            answer += f"\n[{stored}]"
        return answer

    def _row(self, call_id: str, text: str | None, run: ScriptRun) -> str | None:
        """Record the row of one ``run_script`` call; a sentence when it was not stored."""
        row = run.row(call_id, "run_script", self.dispatched, text)
        try:
            answer = self.scripts.append(row)
        except Exception as error:  # a sink that breaks its promise not to raise
            answer = f"the run was not recorded ({type(error).__name__})"
        return None if answer == "Recorded." else answer

    # -- asks ----------------------------------------------------------------------------

    def _ask_human(self, args: Mapping[str, Any], call_id: str) -> str:
        """Check the question at its source; keep it in :attr:`asked` when accepted, or
        reply with the refusal (its code and the shape of what is wrong, never the value).
        Nothing is stored for a refused ask."""
        if self.ask_refusal is not None:
            self.events("ask_refused", code="too-many")
            return f"The question was not asked: {self.ask_refusal}."
        if self.asked is not None:
            return (
                "One question at a time: a question is already put to a person in this "
                "turn; ask this one after their answer, if it still matters."
            )
        try:
            ask = checked_ask(
                args.get("question"),
                args.get("component"),
                self.artifacts,
                door="ask_human",
                reviewer=True,
            )
        except AskRefused as refused:
            self.events("ask_refused", code=refused.code)
            return (
                f"The question was not asked: refused ({refused.code}): "
                f"{refused.description}. Go on with the review, or call ask_human again "
                "with a question and a component that fit."
            )
        self.asked = (call_id, ask)
        self.events("ask_raised", component=ask.component is not None)
        return "The question is put to a person; the review pauses until they answer."

    def _store_artifact(self, args: Mapping[str, Any]) -> str:
        """Put the value in the run's artifact store; its ref, or why it was not stored."""
        if self.artifacts is None:
            return (
                "No artifact store is attached to this review: give the props inline "
                f"(at most {PROPS_MAX_BYTES} bytes as compact JSON)."
            )
        if "value" not in args:
            return 'store_artifact takes {"value": ...}: the JSON value to store.'
        try:
            ref = self.artifacts.put(args["value"])
        except ValueError as refused:
            return f"Not stored: {refused}"
        return f"Stored as {ref}. Pass it as props_ref of an ask_human component."

    # -- the journal -------------------------------------------------------------------

    def _record(self, args: Mapping[str, Any]) -> str:
        """Append the finding(s) to the journal; the one-sentence reply of docs/harvest.md §1."""
        value: object = args["finding"] if "finding" in args else dict(args)
        recording = split_recorded(value)
        stored = 0
        failure: str | None = None
        for entry in recording.entries:
            try:
                answer = self.journal.append(entry)
            except Exception as error:  # a sink that breaks its promise not to raise
                answer = f"Not recorded ({type(error).__name__}); keep it for your answer."
            problem = _refusal(answer)
            if problem is None:
                stored += 1
                self.entries += 1
                self.on_entry()
            else:
                failure = problem
        if failure is not None:
            if stored:
                failure += f"; {stored} of them were recorded"
            return reply(stored, recording.rejected, failure)
        return reply(stored, recording.rejected)


class _Tree:
    """The file tools over one unpacked tree (``root`` already resolved)."""

    def __init__(self, root: Path, read_max_bytes: int = READ_MAX_BYTES) -> None:
        self.root = root
        self.read_max_bytes = read_max_bytes

    def _resolve(self, value: object, what: str) -> Path | str:
        """The path inside the tree, or the refusal to reply with.

        A path holding U+FFFD is looked up as shown (:func:`spelled_in`): the one entry
        it stands for, or a refusal when several show alike (which is meant is unknown).
        Spaces around a path are taken off unless an entry's name holds them.
        """
        if value is None:
            return self.root
        if not isinstance(value, str) or "\0" in value:
            return f"{what} must be a path relative to the repository root."
        relative = value.lstrip("/\\")
        if relative != relative.strip() and not os.path.lexists(self.root / relative):
            relative = value.strip().lstrip("/\\")  # spaces a model added around a name
        if REPLACEMENT in relative:
            spellings = spelled_in(self.root, relative)
            if len(spellings) > 1:
                return (
                    f"{shown(relative)!r} stands for {len(spellings)} entries of the tree "
                    "whose names show alike (a name that is not UTF-8 shows U+FFFD for each "
                    "bad byte): which one is meant is unknown and the tools cannot name "
                    "them apart, so none is read. Review them from the diff instead."
                )
            if spellings:
                relative = spellings[0]
        target = (self.root / relative).resolve()
        if target != self.root and not target.is_relative_to(self.root):
            return f"{value!r} is outside the repository; paths stay inside the reviewed tree."
        return target

    def _relative(self, path: Path) -> str:
        """The path as the model sees it: relative to the root, shown as the diff shows
        a name that is not UTF-8."""
        return shown(path.relative_to(self.root).as_posix() or ".")

    def read_file(self, args: Mapping[str, Any]) -> str:
        """Numbered lines of a text file of the tree, bounded three ways: at most
        ``read_max_bytes`` of the file are read (the reply says "cut at N bytes"), each
        line shows at most :data:`LINE_MAX_CHARS` characters, and the reply at most
        :data:`READ_MAX_LINES` lines and :data:`OUTPUT_MAX_CHARS` characters (it says how
        to read on). A binary file (a NUL byte early on) is not shown."""
        path = self._resolve(args.get("path"), "path")
        if isinstance(path, str):
            return path
        if not path.is_file():
            return f"There is no file {self._relative(path)!r} in the repository."
        name = self._relative(path)
        size = path.stat().st_size
        with path.open("rb") as handle:
            data = handle.read(self.read_max_bytes)
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            return f"{name}: binary file, not shown ({size} bytes)."
        cut = (
            f"[{name} is {size} bytes; cut at {self.read_max_bytes} bytes: what follows "
            f"cannot be read with read_file; grep searches files up to "
            f"{GREP_MAX_FILE_BYTES} bytes]"
            if size > len(data)
            else ""
        )
        lines = data.decode("utf-8", errors="replace").splitlines()
        start = _line_number(args.get("start_line"), 1)
        end = _line_number(args.get("end_line"), len(lines))
        if start is None or end is None:
            return "start_line and end_line must be whole numbers >= 1."
        if not lines:
            return f"{name} is empty."
        if start > len(lines):
            known = f"only {len(lines)} lines" + (" in its first bytes" if cut else "")
            return f"{name} has {known}." + (f"\n{cut}" if cut else "")
        end = min(end, len(lines), start + READ_MAX_LINES - 1)
        out: list[str] = []
        size_out = 0
        shown = start - 1
        for number in range(start, end + 1):
            text = lines[number - 1]
            if len(text) > LINE_MAX_CHARS:
                text = text[:LINE_MAX_CHARS] + f" [line cut at {LINE_MAX_CHARS} characters]"
            line = f"{number:>6}\t{text}"
            if size_out + len(line) > OUTPUT_MAX_CHARS and out:
                break
            out.append(line)
            size_out += len(line) + 1
            shown = number
        if shown < len(lines):
            out.append(
                f"[shown lines {start}-{shown} of {len(lines)}; read on with "
                f"start_line={shown + 1}]"
            )
        if cut:
            out.append(cut)
        return "\n".join(out)

    def list_files(self, args: Mapping[str, Any]) -> str:
        base = self._resolve(args.get("dir"), "dir")
        if isinstance(base, str):
            return base
        if not base.is_dir():
            return f"There is no directory {self._relative(base)!r} in the repository."
        found: list[str] = []
        for path in self._walk(base):
            found.append(self._relative(path))
            if len(found) > LIST_MAX_FILES:
                break
        if not found:
            return f"No files under {self._relative(base)!r}."
        text = _capped("\n".join(sorted(found[:LIST_MAX_FILES])))
        if len(found) > LIST_MAX_FILES:
            text += f"\n[more than {LIST_MAX_FILES} files; list a subdirectory]"
        return text

    def grep(self, args: Mapping[str, Any]) -> str:
        """Lines of the tree's text files matching an RE2 pattern, within one time
        budget per call (:data:`GREP_BUDGET_MS`, checked before every line) and at most
        :data:`GREP_MAX_MATCHES` hits; binary files are skipped, and so are files over
        :data:`GREP_MAX_FILE_BYTES`, which the reply counts. A pattern RE2 refuses gets the
        reason back."""
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            return "pattern must be a non-empty regular expression."
        if len(pattern) > PATTERN_MAX_CHARS:
            return f"pattern is longer than {PATTERN_MAX_CHARS} characters."
        regex = _compile(pattern)
        if isinstance(regex, str):
            return regex
        base = self._resolve(args.get("path"), "path")
        if isinstance(base, str):
            return base
        files = [base] if base.is_file() else sorted(self._walk(base))
        deadline = time.monotonic() + GREP_BUDGET_MS / 1000
        hits: list[str] = []
        cut = ""
        skipped = 0
        for path in files:
            lines = _text_lines(path)
            if lines is None:
                skipped += _too_large(path)
                continue
            for number, line in lines:
                if time.monotonic() > deadline:
                    cut = f"[search stopped after {GREP_BUDGET_MS} ms; narrow path or pattern]"
                    break
                if regex.search(line[: GREP_LINE_CHARS * 4]):
                    hits.append(f"{self._relative(path)}:{number}: {line[:GREP_LINE_CHARS]}")
                    if len(hits) >= GREP_MAX_MATCHES:
                        cut = f"[stopped at {GREP_MAX_MATCHES} matches; narrow the search]"
                        break
            if cut:
                break
        if skipped:
            cut += ("\n" if cut else "") + (
                f"[{skipped} file(s) over {GREP_MAX_FILE_BYTES} bytes not searched; read "
                "them with read_file]"
            )
        if not hits:
            return f"No line matches {pattern!r}." + (f"\n{cut}" if cut else "")
        return _capped("\n".join(hits)) + (f"\n{cut}" if cut else "")

    def _walk(self, base: Path) -> Iterator[Path]:
        """Files under ``base`` inside the tree (symlinks out of it skipped, .git too)."""
        for folder, dirs, names in os.walk(base):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in names:
                path = Path(folder) / name
                if path.is_symlink():
                    real = path.resolve()
                    if not real.is_relative_to(self.root) or not real.is_file():
                        continue
                yield path


_NOT_RECORDED = re.compile(r"Not recorded \((?P<reason>.*)\)")


def _refusal(answer: str) -> str | None:
    """The reason in a journal's reply, or None when it recorded the entry."""
    if answer.startswith("Recorded"):
        return None
    match = _NOT_RECORDED.match(answer)
    return match.group("reason") if match else answer.rstrip(".") or "the journal refused it"


def _line_number(value: object, default: int) -> int | None:
    """A 1-based line number from a tool argument (None when unusable)."""
    if value is None:
        return default
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if isinstance(value, int) and value >= 1 else None


def _text_lines(path: Path) -> Iterator[tuple[int, str]] | None:
    """Numbered lines of a text file; None for a binary, large or unreadable one."""
    try:
        if path.stat().st_size > GREP_MAX_FILE_BYTES:
            return None
        with path.open("rb") as handle:
            data = handle.read(GREP_MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(data) > GREP_MAX_FILE_BYTES or b"\0" in data[:BINARY_SNIFF_BYTES]:
        return None
    return enumerate(data.decode("utf-8", errors="replace").splitlines(), 1)


def _too_large(path: Path) -> int:
    """1 when ``path`` is a file ``grep`` skips for its size, else 0."""
    try:
        return int(path.stat().st_size > GREP_MAX_FILE_BYTES)
    except OSError:
        return 0


def _compile(pattern: str) -> Any:
    """The RE2 form of a ``grep`` pattern, or the reply saying why RE2 refuses it.

    RE2 runs in time linear in the text, so no pattern can hold the worker; it refuses
    what needs backtracking (backreferences, lookaround) and repetitions over 1000.
    """
    options = re2.Options()
    options.log_errors = False
    options.max_mem = GREP_MAX_MEM_BYTES
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        reason = error.args[0] if error.args else error
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return (
            f"pattern is not a valid regular expression for RE2 ({reason}); grep uses RE2 "
            "syntax, which has no backreferences nor lookaround: rewrite it without them."
        )


def _capped(text: str) -> str:
    """``text`` cut to :data:`OUTPUT_MAX_CHARS`, saying so."""
    if len(text) <= OUTPUT_MAX_CHARS:
        return text
    return text[:OUTPUT_MAX_CHARS] + f"\n[cut at {OUTPUT_MAX_CHARS} characters]"
