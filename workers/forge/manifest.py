"""``council-run.json``: which run wrote an output directory, at which head, and what.

``{"council_outputs": 1, "run_id", "session", "head", "base", "files": {name: sha256 hex}}``,
written by ``council review --output DIR`` after its files. ``council publish`` reads
nothing else and refuses a directory without one, one of another head than CI names, and
any file it would post that is not listed or hashes differently: a pull request can commit
its own ``council-out/``, and a committed manifest cannot name the commit that holds it.
``council review`` refuses an output directory holding files it did not write
(:func:`clear_for_run`). Source: issue "CI outputs that forges accept"; brief "forged
outputs"; docs/ci-and-forges.md "Publishing against a hostile pull request".
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from council.rendering.escape import no_controls_json

MANIFEST_NAME = "council-run.json"
"""The manifest's file name in the output directory."""

MANIFEST_VERSION = 1
"""The manifest's shape; a reader refuses a version it does not know."""

_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HASH = re.compile(r"[0-9a-f]{64}")
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class OutputsRefused(Exception):
    """An output directory that must not be written to or published from (exit 2)."""


def check_head(head: str, where: str = "--head") -> str:
    """A full commit sha (40 or 64 hex, lower-cased); OutputsRefused naming ``where``."""
    sha = head.strip().lower()
    if not _SHA.fullmatch(sha):
        raise OutputsRefused(
            f"{where} {head!r} is not a full commit sha (40 hex digits): pass the commit "
            "the review ran on (GitHub: ${{ github.event.pull_request.head.sha }}, "
            "GitLab: $CI_COMMIT_SHA)"
        )
    return sha


def sha256(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex."""
    return hashlib.sha256(data).hexdigest()


def render_manifest(
    *, run_id: str, session: str, head: str, base: str, files: dict[str, bytes]
) -> str:
    """The manifest's JSON text for files written (name → the bytes written); no control
    or bidirectional character of the session's name is written raw
    (:func:`~council.rendering.escape.no_controls_json`)."""
    document = {
        "council_outputs": MANIFEST_VERSION,
        "run_id": run_id,
        "session": session,
        "head": head,
        "base": base,
        "files": {name: sha256(data) for name, data in sorted(files.items())},
    }
    return no_controls_json(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"


@dataclass(frozen=True)
class RunOutputs:
    """An output directory whose manifest was checked against the head CI names.

    Read its files with :meth:`read`, which checks each against the manifest.
    """

    directory: Path
    run_id: str
    head: str
    session: str = ""
    files: dict[str, str] = field(default_factory=dict)

    def read(self, name: str) -> str | None:
        """The text of output ``name``; None when the run did not write it (and it is
        absent). Raises OutputsRefused when the file is there but the manifest does not
        list it, when it is listed but missing, or when its bytes are not those the run
        wrote."""
        path = self.directory / name
        listed = self.files.get(name)
        if listed is None:
            if path.exists() or path.is_symlink():
                raise OutputsRefused(
                    f"{path} is not an output of run {self.run_id} ({MANIFEST_NAME} does "
                    "not list it): it was put there by something else, e.g. committed by "
                    "the pull request; nothing was published"
                )
            return None
        if path.is_symlink() or not path.is_file():
            raise OutputsRefused(
                f"{path}: run {self.run_id} wrote it, but it is missing or not a plain "
                "file now; publish the directory the review wrote, untouched"
            )
        data = path.read_bytes()
        if sha256(data) != listed:
            raise OutputsRefused(
                f"{path} is not the file run {self.run_id} wrote (its SHA-256 differs "
                f"from {MANIFEST_NAME}'s): it was changed after the review, or comes from "
                "another run; nothing was published"
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OutputsRefused(f"{path} is not UTF-8 ({exc})") from None


def read_outputs(directory: Path, head: str) -> RunOutputs:
    """The checked outputs of ``directory``, which must be those of a run at ``head``.

    Raises OutputsRefused, saying what is wrong and what to do: no manifest (not a
    council output directory, or one from before manifests), an unreadable one, or a
    head other than ``head`` (outputs of another commit, or forged).
    """
    expected = check_head(head)
    if not directory.is_dir():
        raise OutputsRefused(
            f"--from {directory} is not a directory: pass the --output DIR of `council review`"
        )
    document = _load(directory / MANIFEST_NAME)
    if document is None:
        raise OutputsRefused(
            f"{directory} has no {MANIFEST_NAME}, so nothing in it is known to be "
            "council's: run `council review ... --output "
            f"{directory}` (into a new directory) and publish what it wrote"
        )
    outputs = _parse(directory, document)
    if outputs.head != expected:
        raise OutputsRefused(
            f"{directory} holds the outputs of run {outputs.run_id} at head "
            f"{outputs.head[:12] or '(none)'}, not of {expected[:12]} (--head): they are "
            "another commit's, or forged; review this head and publish its outputs"
        )
    return outputs


def clear_for_run(directory: Path) -> list[Path]:
    """Make ``directory`` ready for a run's outputs; the earlier outputs it removed.

    A missing or empty directory is ready. One holding exactly an earlier run's outputs
    (its manifest and the files it lists, plain files) is emptied of them. Anything
    else raises OutputsRefused naming what is there: council writes only into a
    directory it created or wrote, so its manifest never vouches for a file it did not
    write. A symbolic link is refused too (it would send the outputs elsewhere).
    """
    if directory.is_symlink():
        raise OutputsRefused(
            f"--output {directory} is a symbolic link: pass a real directory (in CI, the "
            "pull request may have committed it)"
        )
    if not directory.is_dir():
        return []
    entries = sorted(directory.iterdir())
    if not entries:
        return []
    listed: set[str] = set()
    try:
        document = _load(directory / MANIFEST_NAME)
        if document is not None:
            listed = set(_parse(directory, document).files) | {MANIFEST_NAME}
    except OutputsRefused:
        listed = set()  # an unreadable manifest vouches for nothing, itself included
    strangers = [e for e in entries if e.name not in listed or e.is_symlink() or not e.is_file()]
    if strangers:
        names = ", ".join(e.name for e in strangers[:5]) + (" …" if len(strangers) > 5 else "")
        raise OutputsRefused(
            f"--output {directory} is not empty and holds files council did not write "
            f"({names}): pass a new or empty directory. In CI, the pull request may have "
            "committed it; nothing was reviewed"
        )
    for entry in entries:
        entry.unlink()
    return entries


def _load(path: Path) -> dict[str, Any] | None:
    if path.is_symlink() or not path.is_file():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise OutputsRefused(f"{path} cannot be read ({exc})") from None
    if not isinstance(document, dict):
        raise OutputsRefused(f"{path} is not a council manifest (not a JSON object)")
    return document


def _parse(directory: Path, document: dict[str, Any]) -> RunOutputs:
    path = directory / MANIFEST_NAME
    if document.get("council_outputs") != MANIFEST_VERSION:
        raise OutputsRefused(
            f"{path} is not a council manifest of version {MANIFEST_VERSION} "
            f"(council_outputs: {document.get('council_outputs')!r}); publish with the "
            "council that reviewed"
        )
    run_id, head, files = document.get("run_id"), document.get("head"), document.get("files")
    session = document.get("session")
    if not isinstance(run_id, str) or not _RUN_ID.fullmatch(run_id):
        raise OutputsRefused(f"{path}: run_id {run_id!r} is not a council run id")
    if not isinstance(head, str) or not (head == "" or _SHA.fullmatch(head)):
        raise OutputsRefused(f"{path}: head {head!r} is not a commit sha")
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and _FILE_NAME.fullmatch(k) and isinstance(v, str) and _HASH.fullmatch(v)
        for k, v in files.items()
    ):
        raise OutputsRefused(f"{path}: files must map output names to SHA-256 hex digests")
    return RunOutputs(
        directory=directory,
        run_id=run_id,
        head=head,
        session=session if isinstance(session, str) else "",
        files=dict(files),
    )
