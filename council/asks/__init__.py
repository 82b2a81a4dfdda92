"""Typed human asks: a question in prose and, optionally, the screen component to answer it.

* :mod:`council.asks.component`: the component, its refusals, the scope a ``props_ref``
  resolves in, and its one reader;
* :mod:`council.asks.ask`: the ask, built and checked at the source by :func:`checked_ask`;
* :mod:`council.asks.pending`: a question a run waits on, and its answer checked;
* :mod:`council.asks.confirm`: ``[policy] confirm``, a person confirms a finding;
* :mod:`council.asks.paused`: a reviewer paused on its own question.

Pure: the artifact store is reached only through the caller's :class:`ArtifactScope`.
Source: docs/evidence-and-asks.md §2.
"""

from council.asks.ask import Ask, checked_ask
from council.asks.component import (
    COMPONENT_KEYS,
    PROPS_MAX_BYTES,
    REFUSAL_CODES,
    ArtifactScope,
    Component,
    KnownRefs,
    Refusal,
    RefusalCode,
    checked_component,
    component_refusal,
    read_component,
    shape_problem,
)

__all__ = [
    "COMPONENT_KEYS",
    "PROPS_MAX_BYTES",
    "REFUSAL_CODES",
    "ArtifactScope",
    "Ask",
    "Component",
    "KnownRefs",
    "Refusal",
    "RefusalCode",
    "checked_ask",
    "checked_component",
    "component_refusal",
    "read_component",
    "shape_problem",
]
