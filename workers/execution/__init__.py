"""The worker side: one participant's attempt, batches, leases, cancellation, the sweep."""
