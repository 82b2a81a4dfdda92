"""The files ``council review`` writes: ``--format`` × ``--output DIR``, ``--json``, ``--markdown``.

Each format has one file name in the output directory (:data:`FILE_NAMES
<workers.cli.options.FILE_NAMES>`), the name its consumer expects or a CI recipe points
at; after them the run writes ``council-run.json``
(:mod:`workers.forge.manifest`), which ``council publish`` checks. An output directory holding
anything but an earlier run's outputs, or a format other than Markdown without ``--output``, is
a usage error (exit 2) found before anything is sent: a traceback after the run would exit 1,
which CI reads as a tripped gate. The renderers are the pure :mod:`council.rendering`
functions. Source: issue "CI outputs that forges accept".
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import click

from council.change.diff import Change
from council.model.gate_policy import GatePolicy
from council.model.report import NO_RUN, CouncilReport
from council.rendering import render_json, render_markdown
from council.rendering.escape import for_log
from council.rendering.github_checks import render_github_checks_with_cuts
from council.rendering.github_review import Post, render_github_review_with_cuts
from council.rendering.gitlab import render_gitlab_codequality, render_gitlab_discussions
from council.rendering.sarif import render_sarif_with_cuts
from council.round.gate import EXIT_PASSED, exit_code, gate_summary, parse_fail_on
from workers.cli.context import UsageProblem
from workers.cli.options import FILE_NAMES
from workers.coordinator.round_plan import RoundPlan
from workers.forge.manifest import MANIFEST_NAME, OutputsRefused, clear_for_run, render_manifest


@dataclass(frozen=True)
class OutputPlan:
    """What to write where, checked before the run."""

    formats: tuple[str, ...] = ("markdown",)
    directory: Path | None = None
    json_file: Path | None = None
    markdown_file: Path | None = None
    post: Post = "leading"
    """``--post``: which findings the forge outputs comment on (docs/ranking.md)."""

    @property
    def markdown_to_stdout(self) -> bool:
        """Markdown goes to stdout when asked for and no file takes it."""
        return "markdown" in self.formats and self.directory is None and self.markdown_file is None


@dataclass
class Written:
    """What :func:`write_outputs` did: files written, the Markdown for stdout (or None),
    and the sentences a renderer said about cuts (for stderr)."""

    files: list[Path] = field(default_factory=list)
    stdout: str | None = None
    messages: list[str] = field(default_factory=list)


def link_on_the_way(path: Path, checkout: Path | None = None) -> Path | None:
    """The symbolic link a file written at ``path`` would be written through, or None.

    ``path`` itself when it is a link (a dangling one too). With ``checkout`` (the
    reviewed repository's top), also any directory on the way from the checkout down
    to ``path``, when ``path`` lies in it: in a CI checkout every link there is the
    change's own (``out -> ../..`` committed beside ``--json out/report.json``).
    Links above the checkout, or on the way to a path outside it, are the user's
    (``/tmp`` a link to ``/private/tmp``) and are followed. Never raises.
    Source: issue "The change under review is untrusted".
    """
    if path.is_symlink():
        return path
    if checkout is None:
        return None
    here = Path(os.path.abspath(path))
    for top in dict.fromkeys([Path(os.path.abspath(checkout)), checkout.resolve()]):
        if here == top or not here.is_relative_to(top):
            continue
        step = top
        for part in here.relative_to(top).parts[:-1]:
            step = step / part
            if step.is_symlink():
                return step
    return None


def refuse_link(option: str, path: Path, checkout: Path | None = None) -> None:
    """Refuse (exit 2) to write ``option``'s file ``path`` through a symbolic link
    (:func:`link_on_the_way`). Why: a pull request can commit ``report.json ->
    ../../.bashrc``, and CI writes its report in the checkout. Raises
    :class:`UsageProblem` naming the option and the link."""
    link = link_on_the_way(path, checkout)
    if link is None:
        return
    where = "is a symbolic link" if link == path else f"lies behind the symbolic link {link}"
    raise UsageProblem(
        f"{option} {path} {where}: council does not write through links (in CI, the pull "
        "request may have committed it); nothing was reviewed. Pass a path outside the "
        "checkout, e.g. under $RUNNER_TEMP"
    )


def plan_outputs(
    formats: Sequence[str],
    directory: Path | None,
    json_file: Path | None,
    markdown_file: Path | None,
    *,
    checkout: Path | None = None,
) -> OutputPlan:
    """Check the output options; create ``directory`` when missing.

    Raises :class:`UsageProblem` (exit 2) for a format other than Markdown without
    ``--output``, an output directory that cannot be created or holds files no council
    run wrote (:func:`~workers.forge.manifest.clear_for_run`; an earlier run's outputs
    are removed), a ``--json`` / ``--markdown`` file in a directory that does not
    exist, or any of them reached through a symbolic link (:func:`refuse_link`; the
    links inside ``checkout``, the reviewed repository's top, on the way too).
    """
    asked = (("--output", directory), ("--json", json_file), ("--markdown", markdown_file))
    for option, path in asked:
        if path is not None:
            refuse_link(option, path, checkout)
    chosen = tuple(dict.fromkeys(formats)) or ("markdown",)
    files_only = [f for f in chosen if f != "markdown"]
    if files_only and directory is None:
        raise UsageProblem(
            f"--format {files_only[0]} writes a file: pass --output DIR (only markdown "
            "goes to stdout)"
        )
    if directory is not None:
        try:
            cleared = clear_for_run(directory)
        except OutputsRefused as exc:
            raise UsageProblem(str(exc)) from None
        except OSError as exc:
            raise UsageProblem(
                f"--output {directory}: an earlier run's outputs cannot be removed "
                f"({exc.strerror}); pass a new directory"
            ) from None
        if cleared:
            click.echo(
                f"council: removed the earlier outputs in {directory} ({len(cleared)} files)",
                err=True,
            )
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageProblem(
                f"--output {directory} cannot be created ({exc.strerror}); pass a writable "
                "directory"
            ) from None
    for option, path in (("--json", json_file), ("--markdown", markdown_file)):
        if path is not None and not path.parent.is_dir():
            raise UsageProblem(
                f"{option} {path}: the directory {path.parent} does not exist; create it, "
                "or pass a path in an existing directory"
            )
    return OutputPlan(chosen, directory, json_file, markdown_file)


def write_outputs(
    report: CouncilReport,
    plan: OutputPlan,
    *,
    change: Change | None,
) -> Written:
    """Render and write every output of ``plan``, each gated by ``report.gate``; return
    what was done.

    ``change`` is the diff the pull request shows (for the GitHub review's line
    comments); None when unknown. Into ``plan.directory``, the manifest is written
    last (a run that fails half-way leaves none, and nothing to publish). Raises
    :class:`UsageProblem` naming the option when a file cannot be written (the run
    itself settled).
    """
    done = Written()
    markdown: str | None = None
    if "markdown" in plan.formats or plan.markdown_file is not None:
        markdown = render_markdown(report)
    json_text = render_json(report) if "json" in plan.formats or plan.json_file else None
    if plan.markdown_file is not None and markdown is not None:
        _write(plan.markdown_file, markdown, "--markdown", done)
    if plan.json_file is not None and json_text is not None:
        _write(plan.json_file, json_text, "--json", done)
    if plan.markdown_to_stdout and markdown is not None:
        done.stdout = _encodable(markdown)
    if plan.directory is None:
        return done
    written: dict[str, bytes] = {}
    for name in plan.formats:
        if name == "markdown" and markdown is not None:
            text = markdown
        elif name == "json" and json_text is not None:
            text = json_text
        elif name == "sarif":
            text, cuts = render_sarif_with_cuts(report)
            done.messages += cuts
        elif name == "github-review":
            text, cuts = render_github_review_with_cuts(report, change=change, post=plan.post)
            done.messages += cuts
        elif name == "github-checks":
            text, cuts = render_github_checks_with_cuts(report, change=change)
            done.messages += cuts
        elif name == "gitlab-discussions":
            text = render_gitlab_discussions(report, change, plan.post)
        else:
            text = render_gitlab_codequality(report)
        file = FILE_NAMES[name]
        written[file] = _write(plan.directory / file, text, f"--format {name}", done)
    manifest = render_manifest(
        run_id=report.run_id,
        session=report.session,
        head=report.head,
        base=report.base,
        files=written,
    )
    _write(plan.directory / MANIFEST_NAME, manifest, "--output", done)
    return done


def emit(
    report: CouncilReport,
    plan: OutputPlan,
    *,
    change: Change | None,
) -> None:
    """Write the outputs; Markdown to stdout when no file takes it; the files written
    and what a renderer cut to stderr."""
    written = write_outputs(report, plan, change=change)
    for message in written.messages:
        click.echo(for_log(f"council: {message}", one_line=True), err=True)
    if written.stdout is not None:
        click.echo(for_log(written.stdout))
    if plan.directory is not None:
        click.echo(f"council: wrote {', '.join(str(p) for p in written.files)}", err=True)


def nothing_to_review(
    text: str,
    plan: RoundPlan | None,
    outputs: OutputPlan,
    *,
    fail_on: str,
    head: str = "",
    base: str = "",
) -> int:
    """Say there was nothing to review; return the exit code.

    With ``--since-last`` after an earlier round, nothing new does not make the change
    clean: the findings still open are carried (:meth:`RoundPlan.carried_report`; no
    reviewer is asked, so no quorum applies), written like any report, and gated.
    Otherwise the exit is 0, and requested files are still written, from an empty
    passing report (no run, no participant, the reason in its notes), so a CI job's
    later steps (upload, publish) find what they read; ``head`` and ``base`` (commit
    shas, when known) are the empty report's, so its outputs can be published for that
    head."""
    since = plan.since.since if plan is not None else None
    if since is not None and "empty" in text:
        text = (
            f"nothing to review: no change after {since[:12]}, the head the last round of "
            "this session reviewed"
        )
    click.echo(for_log(f"council: {text}", one_line=True), err=True)
    carried = plan.carried_report(f"{text}.") if plan is not None else None
    if carried is not None:
        carried = carried.gated(fail_on=parse_fail_on(fail_on), quorum=0)
        emit(carried, outputs, change=None)
        click.echo(gate_summary(carried), err=True)
        return exit_code(carried)
    if outputs.directory is None and outputs.json_file is None and outputs.markdown_file is None:
        click.echo(f"{text}.")
        return EXIT_PASSED
    notes = (f"{text}.", *(plan.since.notes if plan is not None else ()))
    session = plan.session if plan is not None else ""
    empty = CouncilReport(
        run_id=NO_RUN,
        session=session,
        base=base,
        head=head,
        status="settled",
        notes=notes,
        gate=GatePolicy(fail_on=parse_fail_on(fail_on), quorum=0),
    )
    emit(empty, outputs, change=None)
    return EXIT_PASSED


def head_sha(repo: Path, ref: str) -> str:
    """The commit sha ``ref`` names in ``repo``; empty when it cannot be read (the
    outputs then name no head, and ``council publish`` refuses them)."""
    from council.errors import ConfigurationError
    from workers.git.repository import Repository

    try:
        return Repository(repo).resolve(ref)
    except ConfigurationError:
        return ""


def _write(path: Path, text: str, option: str, done: Written) -> bytes:
    """Write a report file; its bytes. A failure is exit 2 naming the option, never a
    traceback.

    Opened with ``O_NOFOLLOW``: a link put at ``path`` since :func:`plan_outputs`
    checked it is refused, not written through. A lone surrogate (a reviewer's JSON
    may hold ``"\\ud800"``) cannot be UTF-8: it is written as ``?``, so the file stays
    valid UTF-8 (and valid JSON).
    """
    data = text.encode("utf-8", errors="replace")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            refuse_link(option, path)
        raise UsageProblem(
            f"{option} {path} cannot be written ({exc.strerror}); the run itself settled. "
            "Pass a writable path"
        ) from None
    done.files.append(path)
    return data


def _encodable(text: str) -> str:
    """``text`` with lone surrogates replaced, so printing it cannot raise."""
    return text.encode("utf-8", errors="replace").decode("utf-8")
