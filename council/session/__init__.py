"""A session over its rounds: the identity ledger, remembered findings, earlier rounds,
the baseline."""
