"""Reviewer programs: a command, a SARIF analyzer, a recorded replay, and the process runner."""
