"""The session a CI job's review belongs to, from the CI's own variables.

In CI a session is the pull (merge) request, whatever branch or detached commit the job
checked out: most CI systems check out a detached HEAD, so a session read from the branch
would start over on every push and lose dismissals, ``--since-last`` and *seen* marks. GitHub
Actions: ``GITHUB_REPOSITORY`` and the number from ``GITHUB_REF`` (``refs/pull/N/merge``) or
the event file ``GITHUB_EVENT_PATH`` (read up to :data:`EVENT_CAP_BYTES`); GitLab CI:
``CI_PROJECT_PATH`` and ``CI_MERGE_REQUEST_IID``.

Source: docs/architecture.md "State in Redis" (sessions).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

EVENT_CAP_BYTES = 4 * 1024 * 1024
"""The most of GitHub's event file read (it holds the pull request's JSON); a larger one
is not read, and the session falls back to the branch."""

_PULL_REF = re.compile(r"refs/pull/(\d+)/(?:merge|head)")


def ci_session(env: Mapping[str, str]) -> str | None:
    """``github:OWNER/NAME#pr-N`` or ``gitlab:GROUP/PROJECT#mr-IID`` when the CI's
    variables name a pull or merge request; None otherwise."""
    repository = env.get("GITHUB_REPOSITORY", "").strip()
    if env.get("GITHUB_ACTIONS") == "true" and repository:
        number = _github_pull_number(env)
        if number is not None:
            return f"github:{repository}#pr-{number}"
    project = env.get("CI_PROJECT_PATH", "").strip()
    iid = env.get("CI_MERGE_REQUEST_IID", "").strip()
    if env.get("GITLAB_CI") == "true" and project and iid.isdigit():
        return f"gitlab:{project}#mr-{iid}"
    return None


def _github_pull_number(env: Mapping[str, str]) -> int | None:
    """The pull request's number: from ``GITHUB_REF``, else from the event file."""
    matched = _PULL_REF.fullmatch(env.get("GITHUB_REF", "").strip())
    if matched:
        return int(matched.group(1))
    event = env.get("GITHUB_EVENT_PATH", "").strip()
    if not event:
        return None
    try:
        with Path(event).open("rb") as handle:
            raw = handle.read(EVENT_CAP_BYTES + 1)
        if len(raw) > EVENT_CAP_BYTES:
            return None
        number = json.loads(raw).get("pull_request", {}).get("number")
    except (OSError, ValueError, AttributeError):
        return None
    return number if isinstance(number, int) and not isinstance(number, bool) else None
