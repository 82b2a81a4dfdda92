"""Readers of reports other tools wrote: SARIF logs, council JSON reports, harvest JSON."""
