"""A reviewer for a backend this version of council does not ship.

The roster accepts every backend of the design (``openai``, ``anthropic``, ...) so a
roster written for a newer council still parses; a participant on a backend not built
here fails, with a reason saying so, instead of breaking the round (docs/harvest.md §7: a
failure has no findings and says why).

Source: docs/identity-and-clocks.md "Participant" (backends), docs/harvest.md §7.
"""

from __future__ import annotations

from council.model.backend_result import ReviewResult
from reviewers.base import ReviewRequest


class UnavailableReviewer:
    """Fails every review with a reason naming the backend and the way out."""

    def __init__(self, backend: str) -> None:
        self.backend = backend

    def review(self, request: ReviewRequest) -> ReviewResult:
        """A failure: the backend is not available in this version."""
        return ReviewResult(
            failure=(
                f"the {self.backend} backend is not available in this version of council; "
                f"run the model through a command reviewer (a CLI that reads the prompt "
                f"on stdin and prints the answer), or use replay for a recorded answer"
            )
        )
