"""Merging reviewers' findings: sameness, agreement, consolidation, recognition across rounds."""
