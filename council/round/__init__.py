"""One round of review: the run lifecycle, each participant's outcome, filing, cost, the gate."""
