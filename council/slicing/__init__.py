"""Context budgets and slices: a change too large for a participant's context is cut
into slices that fit, each reviewed by its own task. Source: docs/architecture.md "Slices"."""
