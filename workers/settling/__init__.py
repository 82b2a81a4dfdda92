"""Settling a run: consolidation, the errback finalizer, session marks, the judge's turn."""
