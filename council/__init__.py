"""council: a distributed, multi-model code-review council (the pure domain)."""
