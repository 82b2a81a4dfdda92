"""Ranking findings by how likely they are real: track records, the likelihood model,
scorecards and imported outcomes. Source: docs/ranking.md."""
