"""Typed human asks: a question in prose and, optionally, the registered screen component
that should collect the answer, checked at the source when the ask is raised.

* :mod:`council.asks.component`: the component, its shape rules and the refusals
  (``shape``, ``no-store``, ``unresolved-ref``), the scope a ``props_ref`` resolves in,
  and the one reader of a stored component.
* :mod:`council.asks.ask`: the ask itself (question and component), built by
  :func:`checked_ask`.
* :mod:`council.asks.pending`: a question a run waits on, and the answer checked
  against its component.
* :mod:`council.asks.confirm`: ``[policy] confirm``, a person confirms a finding.
* :mod:`council.asks.paused`: a reviewer paused on its own question, and what its
  answer continues.

Pure: values in, values out; the run's artifact store is reached only through the
:class:`ArtifactScope` the caller passes. Source: docs/evidence-and-asks.md §2.
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
